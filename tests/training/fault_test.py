"""Faults: SIGKILL mid-epoch then resume; a NaN stops training cleanly."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import cli_env
from tests.training.training_helpers import hdf5_arrays
from tests.training.training_helpers import run_cli
from tests.training.training_helpers import tiny_train_args

KILL_CHILD = os.path.join(os.path.dirname(__file__), "kill_at_step_child.py")


def train_args(vocab, out):
    return [
        "-v",
        *tiny_train_args(
            vocab,
            out,
            "--epochs",
            "2",
            "--steps-per-epoch",
            "24",
            "--batch-size",
            "16",
            "--checkpoint-every",
            "4",
            "--deterministic",
        ),
    ]


@pytest.mark.large
def test_sigkill_mid_epoch_resumes_and_matches_uninterrupted(
    sample_vocab, tmp_path
):
    reference = str(tmp_path / "reference")
    done = run_cli(*train_args(sample_vocab, reference))
    assert done.returncode == 0, done.stderr

    out = str(tmp_path / "killed")
    # Killed after step 14 of epoch 1: the last checkpoint is step 12.
    process = subprocess.run(
        [sys.executable, KILL_CHILD, "14", *train_args(sample_vocab, out)],
        env=cli_env(),
        capture_output=True,
        timeout=600,
    )
    assert process.returncode == -signal.SIGKILL, process.stderr[-2000:]
    assert not os.path.exists(os.path.join(out, "weights.hdf5"))
    checkpoints = os.path.join(out, "checkpoints")
    latest = tf.train.latest_checkpoint(checkpoints)
    step = int(latest.rsplit("-", 1)[1])
    assert step == 12, "killed mid-epoch 1, after checkpoint 12"

    resumed = run_cli(*train_args(sample_vocab, out))
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resumed from {latest}" in resumed.stderr
    assert f"batch {step}, step {step}" in resumed.stderr
    for name in ("weights.hdf5", "softmax.hdf5"):
        expected = hdf5_arrays(os.path.join(reference, name))
        actual = hdf5_arrays(os.path.join(out, name))
        assert sorted(actual) == sorted(expected)
        for key in expected:
            np.testing.assert_array_equal(actual[key], expected[key], key)
    # The history of the interrupted epoch covers all of its steps: the
    # same step count, loss and perplexity as the uninterrupted run's.
    histories = []
    for folder in (reference, out):
        with open(os.path.join(folder, "history.json")) as f:
            histories.append(json.load(f))
    expected, actual = histories
    assert [h["epoch"] for h in actual] == [1, 2]
    assert [h["steps"] for h in actual] == [24, 24]
    for want, got in zip(expected, actual):
        for key in ("epoch", "steps", "loss", "perplexity", "learning_rate"):
            assert got[key] == want[key], (want["epoch"], key)


@pytest.mark.large
def test_nan_stops_training_and_keeps_the_last_good_checkpoint(
    sample_vocab, tmp_path, monkeypatch
):
    from keras_elmo.training import trainer as trainer_module
    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.trainer import TrainingDiverged
    from keras_elmo.training.training_config import TrainingConfig

    real_loss = trainer_module.direction_loss_sum

    def poisoned(softmax, hidden, targets, **kwargs):
        loss_sum, count = real_loss(softmax, hidden, targets, **kwargs)
        # A NaN enters with the batch of step 6 (steps count from 0).
        seed = kwargs["seed"]
        is_bad = tf.equal(seed[1] // 1024, 6)
        return tf.where(is_bad, np.float32(np.nan), loss_sum), count

    monkeypatch.setattr(trainer_module, "direction_loss_sum", poisoned)
    out = str(tmp_path / "nan")
    config = TrainingConfig(
        train=TRAIN,
        vocab=sample_vocab,
        out_dir=out,
        model="tiny",
        batch_size=16,
        steps_per_epoch=20,
        checkpoint_every=5,
        verbose=False,
    )
    trainer = Trainer(config)
    with pytest.raises(TrainingDiverged, match="step 6.*last good checkpoint"):
        trainer.train()
    checkpoints = os.path.join(out, "checkpoints")
    assert tf.train.latest_checkpoint(checkpoints).endswith("ckpt-5")
    # The weights in memory were not touched by the bad step, and the
    # checkpoint holds finite weights.
    assert all(np.isfinite(w).all() for w in trainer.model.get_weights())
    reader = tf.train.load_checkpoint(checkpoints)
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        if np.issubdtype(np.asarray(value).dtype, np.floating):
            assert np.isfinite(value).all(), name
    assert not os.path.exists(os.path.join(out, "weights.hdf5"))
