"""The trainer's row-sparse softmax update equals its dense update.

With `--optimizer adagrad` (`SparseAdagrad`) the trainer keeps the sampled
softmax's row gradients as `IndexedSlices` through the all-reduce, the
clip and the update. Replacing the trainer's `SparseAdagrad` check with a
class nothing is an instance of sends every gradient dense, as every
release before did, through the same optimizer (whose dense update is
Keras's Adagrad): both runs must end with the same weights, on one device
and mirrored over two CPU devices.
"""

import os
import subprocess

import numpy as np
import pytest

from keras_elmo.training import trainer as trainer_module
from keras_elmo.training.trainer import Trainer
from keras_elmo.training.training_config import TrainingConfig
from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import cli_command
from tests.training.training_helpers import cli_env
from tests.training.training_helpers import hdf5_arrays
from tests.training.training_helpers import tiny_train_args

FLAGS = (
    "--optimizer",
    "adagrad",
    "--learning-rate",
    "0.2",
    "--num-sampled",
    "64",
    "--batch-size",
    "16",
    "--steps-per-epoch",
    "6",
    "--dropout",
    "0",
)


class _NotSparse:
    """Nothing is an instance of it: the trainer sends gradients dense."""


def _weights(trainer):
    return [np.asarray(w) for w in trainer.model.weights]


@pytest.mark.large
def test_sparse_rows_step_equals_the_dense_step(
    sample_vocab, tmp_path, monkeypatch
):
    def run(name):
        config = TrainingConfig(
            train=TRAIN,
            vocab=sample_vocab,
            out_dir=str(tmp_path / name),
            model="tiny",
            optimizer="adagrad",
            learning_rate=0.2,
            num_sampled=64,
            batch_size=16,
            steps_per_epoch=6,
            dropout=0.0,
            verbose=False,
        )
        trainer = Trainer(config)
        initial = np.asarray(trainer.model.softmax.weights[0]).copy()
        history = trainer.train()
        assert history[0]["steps"] == 6 and np.isfinite(history[0]["loss"])
        return trainer, initial

    sparse, initial = run("sparse")
    assert isinstance(sparse.optimizer, trainer_module.SparseAdagrad)
    monkeypatch.setattr(trainer_module, "SparseAdagrad", _NotSparse)
    dense, dense_initial = run("dense")
    np.testing.assert_array_equal(initial, dense_initial)
    # Training moved the softmax: the comparison is not of two no-ops.
    moved = np.asarray(sparse.model.softmax.weights[0]) - initial
    assert np.abs(moved).max() > 1e-3
    for a, b in zip(_weights(sparse), _weights(dense)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


MIRRORED = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
if sys.argv[1] == "dense":
    from keras_elmo.training import trainer
    trainer.SparseAdagrad = type("NotSparse", (), {})
from keras_elmo.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.large
def test_mirrored_sparse_rows_equal_the_dense_step(sample_vocab, tmp_path):
    outs = {}
    for mode in ("sparse", "dense"):
        outs[mode] = str(tmp_path / mode)
        args = tiny_train_args(sample_vocab, outs[mode], *FLAGS)
        done = subprocess.run(
            [cli_command()[0], "-c", MIRRORED, mode, *args]
            + ["--strategy", "mirrored"],
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    for name in ("weights.hdf5", "softmax.hdf5"):
        a = hdf5_arrays(os.path.join(outs["sparse"], name))
        b = hdf5_arrays(os.path.join(outs["dense"], name))
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_allclose(
                a[key], b[key], rtol=1e-5, atol=1e-6, err_msg=key
            )
