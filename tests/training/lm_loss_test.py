"""Full-softmax losses per token, against a NumPy re-derivation."""

import numpy as np
import tensorflow as tf

from keras_elmo.layers.lm_softmax import LMSoftmax
from keras_elmo.training.fused_loss import direction_loss_sum
from keras_elmo.training.fused_loss import full_softmax_losses


def _softmax_and_batch(seed=0):
    rng = np.random.default_rng(seed)
    softmax = LMSoftmax(7)
    softmax.build((None, 3))
    softmax.embeddings.assign(rng.normal(size=(7, 3)).astype("float32"))
    softmax.bias.assign(rng.normal(size=(7,)).astype("float32"))
    hidden = rng.normal(size=(2, 4, 3)).astype("float32")
    targets = np.array([[3, 0, 6, -1], [5, 2, -1, -1]], np.int32)
    return softmax, hidden, targets


def test_full_softmax_losses_are_the_per_token_cross_entropies():
    softmax, hidden, targets = _softmax_and_batch()
    losses = full_softmax_losses(softmax, hidden, targets).numpy()
    W, b = softmax.embeddings.numpy(), softmax.bias.numpy()
    expected = []
    for row, col in zip(*np.nonzero(targets >= 0)):  # row-major order
        logits = hidden[row, col] @ W.T + b
        log_z = np.log(np.exp(logits - logits.max()).sum()) + logits.max()
        expected.append(log_z - logits[targets[row, col]])
    assert losses.shape == (5,)
    np.testing.assert_allclose(losses, expected, rtol=1e-5, atol=1e-6)


def test_direction_loss_sum_adds_up_the_full_softmax_losses():
    softmax, hidden, targets = _softmax_and_batch(seed=1)
    total, count = direction_loss_sum(softmax, hidden, targets)
    losses = full_softmax_losses(softmax, hidden, targets)
    assert float(count) == 5.0
    np.testing.assert_allclose(
        float(total), float(tf.reduce_sum(losses)), rtol=1e-6
    )
