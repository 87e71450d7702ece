"""`SparseAdagrad` against NumPy and against Keras's dense Adagrad."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.training.sparse_adagrad import SparseAdagrad

LR, EPS = 0.2, 1e-7


def _numpy_adagrad(w, a, dense_grads):
    for g in dense_grads:
        a = a + g * g
        w = w - LR * g / np.sqrt(a + EPS)
    return w, a


def _slices(rng, rows, dim, vocab):
    """A row gradient with repeated indices (two candidates drawn twice)."""
    indices = rng.integers(0, vocab, size=rows)
    indices[-2:] = indices[:2]
    values = rng.normal(size=(rows, dim)).astype("float32")
    return tf.IndexedSlices(
        tf.constant(values), tf.constant(indices, tf.int32), [vocab, dim]
    )


def test_row_updates_equal_numpy_and_the_dense_update():
    rng = np.random.default_rng(0)
    vocab, dim = 40, 6
    start = rng.normal(size=(vocab, dim)).astype("float32")
    grads = [_slices(rng, 9, dim, vocab) for _ in range(3)]

    sparse_var = keras.Variable(start)
    dense_var = keras.Variable(start)
    sparse = SparseAdagrad(LR, initial_accumulator_value=1.0, epsilon=EPS)
    dense = keras.optimizers.Adagrad(
        LR, initial_accumulator_value=1.0, epsilon=EPS
    )
    sparse.build([sparse_var])
    dense.build([dense_var])
    for g in grads:
        sparse.apply_gradients([(g, sparse_var)])
        dense.apply_gradients([(tf.convert_to_tensor(g), dense_var)])

    as_dense = [tf.convert_to_tensor(g).numpy() for g in grads]
    w, a = _numpy_adagrad(start, np.ones_like(start), as_dense)
    np.testing.assert_allclose(sparse_var.numpy(), w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        sparse._accumulators[0].numpy(), a, rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(
        sparse_var.numpy(), dense_var.numpy(), rtol=1e-6, atol=1e-7
    )
    touched = np.unique(np.concatenate([g.indices.numpy() for g in grads]))
    untouched = np.setdiff1d(np.arange(vocab), touched)
    assert untouched.size > 0
    np.testing.assert_array_equal(
        sparse_var.numpy()[untouched], start[untouched]
    )
    np.testing.assert_array_equal(
        sparse._accumulators[0].numpy()[untouched], 1.0
    )


def test_repeated_rows_are_summed_before_squaring():
    var = keras.Variable(np.zeros((3, 2), "float32"))
    opt = SparseAdagrad(LR, initial_accumulator_value=1.0, epsilon=EPS)
    opt.build([var])
    g = tf.IndexedSlices(
        tf.constant([[1.0, 2.0], [3.0, -1.0]]), tf.constant([1, 1]), [3, 2]
    )
    opt.apply_gradients([(g, var)])
    summed = np.array([4.0, 1.0])
    acc = 1.0 + summed**2  # not 1 + 1^2 + 3^2
    np.testing.assert_allclose(opt._accumulators[0].numpy()[1], acc, rtol=1e-6)
    np.testing.assert_allclose(
        var.numpy()[1], -LR * summed / np.sqrt(acc + EPS), rtol=1e-6
    )
    np.testing.assert_array_equal(var.numpy()[[0, 2]], 0.0)


def test_dense_gradients_take_kerass_update_and_it_runs_in_a_function():
    rng = np.random.default_rng(1)
    start = rng.normal(size=(5, 3)).astype("float32")
    var, ref = keras.Variable(start), keras.Variable(start)
    opt = SparseAdagrad(LR, initial_accumulator_value=1.0, epsilon=EPS)
    keras_opt = keras.optimizers.Adagrad(
        LR, initial_accumulator_value=1.0, epsilon=EPS
    )
    opt.build([var])
    keras_opt.build([ref])
    grad = tf.constant(rng.normal(size=(5, 3)).astype("float32"))
    tf.function(lambda: opt.apply_gradients([(grad, var)]))()
    keras_opt.apply_gradients([(grad, ref)])
    # A traced update may fuse ops differently from an eager one: 1 ulp.
    np.testing.assert_allclose(var.numpy(), ref.numpy(), rtol=1e-6)


def test_serializes_by_registered_name():
    opt = SparseAdagrad(0.3, initial_accumulator_value=1.0)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(opt))
    assert isinstance(restored, SparseAdagrad)
    assert restored.get_config()["initial_accumulator_value"] == 1.0
    assert float(restored.learning_rate) == pytest.approx(0.3)
