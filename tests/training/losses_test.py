"""One loss definition (`losses`, keras.ops) and TensorFlow's fast path.

`losses` is checked against the NumPy reference (`loss_reference`);
`fused_loss`, the path TensorFlow trains with, is held equal to
`losses`: the full softmax, the sampled softmax and its fused gradient
against `losses`' autodiff gradient on the same candidates (rtol 1e-5,
atol 1e-6: float32 rounding of different operation orders), and the
sampler's float64 `P(k)` against the definition's (rtol 1e-6).
"""

import numpy as np
import tensorflow as tf

from keras_elmo.layers.lm_softmax import LMSoftmax
from keras_elmo.training import fused_loss
from keras_elmo.training import losses
from tests.training import loss_reference

V, S = 13, 8


def _case(seed=0):
    rng = np.random.default_rng(seed)
    softmax = LMSoftmax(V)
    softmax.build((None, 5))
    softmax.embeddings.assign(rng.normal(size=(V, 5)).astype("float32"))
    softmax.bias.assign(rng.normal(size=(V,)).astype("float32"))
    hidden = rng.normal(size=(3, 6, 5)).astype("float32")
    targets = rng.integers(0, 4, size=(3, 6)).astype(np.int32)
    targets[0, 4:] = -1
    targets[2, 1:] = -1
    return softmax, hidden, targets


def test_definition_matches_the_numpy_reference():
    softmax, hidden, targets = _case()
    w, b = softmax.embeddings.numpy(), softmax.bias.numpy()
    total, count = losses.full_softmax_loss_sum(w, b, hidden, targets)
    expected = loss_reference.full_softmax_losses(w, b, hidden, targets)
    assert float(count) == len(expected) == 11
    np.testing.assert_allclose(float(total), expected.sum(), rtol=1e-5)
    sampled = np.array([0, 3, 2, 0, 7, 12, 3, 1], np.int32)
    total, count = losses.sampled_softmax_loss_sum(
        w, b, hidden, targets, sampled
    )
    expected = loss_reference.sampled_softmax_losses(
        w, b, hidden, targets, sampled
    )
    assert float(count) == 11
    np.testing.assert_allclose(float(total), expected.sum(), rtol=1e-5)


def test_probability_is_the_reference_and_the_fast_paths_sampler():
    for size in (13, 50000, 793471):
        k = np.arange(size)
        defined = np.asarray(losses.log_uniform_probability(k, size))
        _, fast = fused_loss.log_uniform_sample(4, size, tf.constant([1, 2]))
        np.testing.assert_allclose(
            defined, loss_reference.log_uniform_probability(k, size), rtol=1e-6
        )
        np.testing.assert_allclose(defined, fast(k).numpy(), rtol=1e-6)


def test_fast_full_softmax_equals_the_definition():
    softmax, hidden, targets = _case(seed=1)
    fast = fused_loss.direction_loss_sum(softmax, hidden, targets)
    defined = losses.full_softmax_loss_sum(
        softmax.embeddings, softmax.bias, hidden, targets
    )
    for a, b in zip(fast, defined):
        np.testing.assert_allclose(float(a), float(b), rtol=1e-6)


def _dense(grad):
    return tf.convert_to_tensor(grad).numpy()


def test_fused_gradient_equals_the_definitions_autodiff():
    """Same candidates (the fast path's draw, with accidental hits and a
    repeated word), same loss and gradients of `W`, `b` and the states."""
    softmax, hidden, targets = _case(seed=2)
    hidden = tf.constant(hidden)
    seed = tf.constant([5, 6], tf.int64)
    labels = tf.boolean_mask(targets, targets >= 0)
    sampled, _, _ = fused_loss.sampled_candidates(labels, S, V, seed)
    drawn = sampled.numpy()
    assert len(set(drawn)) < S  # a word drawn twice
    assert set(drawn) & set(labels.numpy().tolist())  # accidental hits
    variables = [softmax.embeddings, softmax.bias]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(hidden)
        fast, fast_count = fused_loss.direction_loss_sum(
            softmax, hidden, targets, S, seed, training=True
        )
        defined, count = losses.sampled_softmax_loss_sum(
            softmax.embeddings, softmax.bias, hidden, targets, sampled, S
        )
    assert float(fast_count) == float(count) == 11
    np.testing.assert_allclose(float(fast), float(defined), rtol=1e-5)
    for a, b in zip(
        tape.gradient(fast, [hidden, *variables]),
        tape.gradient(defined, [hidden, *variables]),
    ):
        np.testing.assert_allclose(_dense(a), _dense(b), rtol=1e-5, atol=1e-6)
    reference = loss_reference.sampled_softmax_losses(
        softmax.embeddings.numpy(),
        softmax.bias.numpy(),
        hidden.numpy(),
        targets,
        drawn,
    )
    np.testing.assert_allclose(float(defined), reference.sum(), rtol=1e-5)
