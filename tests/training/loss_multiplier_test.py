"""`loss_multiplier` scales the gradient that the clip and optimizer see.

bilm-tf takes the gradient of `loss * unroll_steps` (x20) and clips that:
with plain SGD and no clip, a multiplier of 3 moves every weight 3 times
as far in one step; with a clip far below the gradient's norm both runs
are clipped to the same norm and take the same step. The reported loss
is the same unscaled loss either way.
"""

import numpy as np
import pytest

from keras_elmo.training.trainer import Trainer
from keras_elmo.training.training_config import TrainingConfig
from tests.training.training_helpers import TRAIN


def _one_step(tmp_path, vocab, name, multiplier, clip_norm):
    config = TrainingConfig(
        train=TRAIN,
        vocab=vocab,
        out_dir=str(tmp_path / name),
        model="tiny",
        optimizer="sgd",
        learning_rate=0.05,
        num_sampled=0,
        batch_size=4,
        steps_per_epoch=1,
        dropout=0.0,
        clip_norm=clip_norm,
        loss_multiplier=multiplier,
        seed=3,
        verbose=False,
    )
    trainer = Trainer(config)
    before = [np.asarray(w).copy() for w in trainer.model.trainable_weights]
    history = trainer.train()
    after = [np.asarray(w) for w in trainer.model.trainable_weights]
    moves = np.concatenate([(a - b).ravel() for a, b in zip(after, before)])
    return moves, history[0]["loss"]


@pytest.mark.large
def test_the_multiplier_scales_the_unclipped_step(tmp_path, sample_vocab):
    one, loss_one = _one_step(tmp_path, sample_vocab, "m1", 1.0, 1e9)
    three, loss_three = _one_step(tmp_path, sample_vocab, "m3", 3.0, 1e9)
    assert np.abs(one).max() > 1e-4  # the step moved the weights
    # Weights minus weights in float32 round each move by ~1e-8: compare
    # the whole step, not its smallest elements one by one.
    ratio = np.dot(three, one) / np.dot(one, one)
    np.testing.assert_allclose(ratio, 3.0, rtol=1e-4)
    residual = np.linalg.norm(three - 3.0 * one) / np.linalg.norm(three)
    assert residual < 1e-3
    assert loss_one == loss_three


@pytest.mark.large
def test_the_clip_sees_the_multiplied_gradient(tmp_path, sample_vocab):
    one, _ = _one_step(tmp_path, sample_vocab, "c1", 1.0, 1e-4)
    three, _ = _one_step(tmp_path, sample_vocab, "c3", 3.0, 1e-4)
    # Both clipped to norm 1e-4: the same step (lr x the clipped gradient).
    np.testing.assert_allclose(np.linalg.norm(one), 0.05 * 1e-4, rtol=1e-3)
    np.testing.assert_allclose(three, one, rtol=1e-4, atol=1e-12)
