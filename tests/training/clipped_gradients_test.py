"""`clipped_gradients` against `tf.clip_by_global_norm` and NumPy."""

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.training.steps import clipped_gradients


def _grads(seed=0, size=1.0):
    rng = np.random.default_rng(seed)
    return [
        tf.constant(rng.normal(size=(3, 4)).astype("float32") * size),
        tf.constant(rng.normal(size=(5,)).astype("float32") * size),
    ]


@pytest.mark.parametrize(
    "size, loss_scale, replicas",
    [(10.0, 1.0, 1), (0.01, 1.0, 1), (10.0, 8.0, 2)],
)
def test_equals_unscale_clip_then_divide_by_replicas(
    size, loss_scale, replicas
):
    grads = _grads(size=size)
    applied, norm, finite = clipped_gradients(grads, 5.0, loss_scale, replicas)
    unscaled = [g / loss_scale for g in grads]
    expected, expected_norm = tf.clip_by_global_norm(unscaled, 5.0)
    flat = np.concatenate([g.numpy().ravel() for g in unscaled])
    assert float(norm) == pytest.approx(np.sqrt((flat**2).sum()), rel=1e-6)
    assert float(norm) == pytest.approx(float(expected_norm), rel=1e-6)
    assert bool(finite)
    for a, e in zip(applied, expected):
        np.testing.assert_allclose(a, e.numpy() / replicas, rtol=1e-6)
    if np.sqrt((flat**2).sum()) <= 5.0:  # below the clip: only unscaled
        for a, u in zip(applied, unscaled):
            np.testing.assert_allclose(a, u.numpy() / replicas, rtol=1e-6)


def test_a_non_finite_norm_applies_zeros_not_nans():
    grads = _grads()
    grads[0] = tf.tensor_scatter_nd_update(grads[0], [[1, 2]], [np.inf])
    applied, norm, finite = clipped_gradients(grads, 5.0)
    assert not bool(finite)
    assert not np.isfinite(float(norm))
    for a, g in zip(applied, grads):
        np.testing.assert_array_equal(a, np.zeros(g.shape, np.float32))


def test_indexed_slices_stay_sparse_and_count_in_the_norm():
    dense = _grads(size=10.0)
    values = tf.constant([[3.0, 0.0, 4.0, 0.0]])
    sparse = tf.IndexedSlices(values, tf.constant([2]), tf.constant([6, 4]))
    applied, norm, _ = clipped_gradients(dense + [sparse], 5.0)
    as_dense = dense + [tf.convert_to_tensor(sparse)]
    expected, expected_norm = tf.clip_by_global_norm(as_dense, 5.0)
    assert float(norm) == pytest.approx(float(expected_norm), rel=1e-6)
    assert isinstance(applied[2], tf.IndexedSlices)
    np.testing.assert_array_equal(applied[2].indices, [2])
    np.testing.assert_allclose(
        tf.convert_to_tensor(applied[2]), expected[2], rtol=1e-6
    )


def test_repeated_rows_are_summed_so_the_norm_is_the_dense_norm():
    # Rows 1 and 1 again: the dense row is [4, 0], norm 4 (not sqrt(10)).
    values = tf.constant([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])
    sparse = tf.IndexedSlices(values, tf.constant([1, 1, 3]), [4, 2])
    applied, norm, _ = clipped_gradients([sparse], 100.0)
    dense = tf.convert_to_tensor(sparse)
    assert float(norm) == pytest.approx(float(tf.norm(dense)), rel=1e-6)
    assert float(norm) == pytest.approx(np.sqrt(16.0 + 4.0), rel=1e-6)
    assert isinstance(applied[0], tf.IndexedSlices)
    np.testing.assert_array_equal(np.sort(applied[0].indices), [1, 3])
    np.testing.assert_allclose(tf.convert_to_tensor(applied[0]), dense)
    # Clipped to norm 2: the dense gradient scaled by 2 / sqrt(20).
    clipped, _, _ = clipped_gradients([sparse], 2.0)
    np.testing.assert_allclose(
        tf.convert_to_tensor(clipped[0]),
        dense.numpy() * 2.0 / np.sqrt(20.0),
        rtol=1e-6,
    )
