"""A run killed on TensorFlow resumes on JAX, from the one checkpoint
format of every backend (`checkpoints.CheckpointStore`).

`cross_backend_resume_outputs.py` trains the tiny biLM with `Trainer`
and SIGKILLs itself after step 10 (the newest checkpoint: step 8,
mid-epoch 2); the same script under `KERAS_BACKEND=jax` then builds
`NeutralTrainer` on the same settings and folder. What it restored,
before any step, is compared here with the TensorFlow checkpoint's
tensors read by `tf.train.load_checkpoint` (exactly: the same float32
bits), and the run must go on from step 8 to the end.

A checkpoint whose data was damaged after it was written, and one of
another architecture, are refused with a message naming the file.
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from tests.backends.backend_subprocess import HERE
from tests.backends.backend_subprocess import run_script
from tests.training.training_helpers import cli_env

pytestmark = pytest.mark.engine

SCRIPT = "cross_backend_resume_outputs.py"
VALUE = ".ATTRIBUTES/VARIABLE_VALUE"


def _group(reader, name):
    arrays = []
    while reader.has_tensor(f"{name}/{len(arrays)}/{VALUE}"):
        arrays.append(reader.get_tensor(f"{name}/{len(arrays)}/{VALUE}"))
    return arrays


@pytest.fixture(scope="module")
def killed_on_tensorflow(tmp_path_factory):
    work = tmp_path_factory.mktemp("cross_backend")
    killed = subprocess.run(
        [sys.executable, os.path.join(HERE, SCRIPT), str(work), "kill"],
        env=cli_env(KERAS_BACKEND="tensorflow"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    return work


def test_a_run_killed_on_tensorflow_resumes_on_jax(killed_on_tensorflow):
    work = killed_on_tensorflow
    folder = work / "run" / "checkpoints"
    latest = tf.train.latest_checkpoint(str(folder))
    assert latest == str(folder / "ckpt-8")
    reader = tf.train.load_checkpoint(latest)
    saved = {
        "model": _group(reader, "model_variables"),
        "optimizer": _group(reader, "optimizer_variables"),
    }
    state = {
        name: reader.get_tensor(f"state/{name}/{VALUE}")
        for name in ("step", "epoch", "batch_in_epoch", "epoch_sums")
    }
    with open(work / "run" / "history.json", encoding="utf-8") as f:
        tensorflow_history = json.load(f)

    run_script("jax", SCRIPT, [work, "resume"], what="resume ")
    with open(work / "facts.json", encoding="utf-8") as f:
        facts = json.load(f)
    assert facts["backend"] == "jax"
    assert facts["resumed_from"] == "ckpt-8"
    assert facts["position"] == {"step": 8, "epoch": 1, "batch_in_epoch": 2}
    assert (int(state["step"]), int(state["epoch"])) == (8, 1)
    assert int(state["batch_in_epoch"]) == 2
    np.testing.assert_array_equal(facts["epoch_sums"], state["epoch_sums"])

    restored = np.load(work / "restored.npz", allow_pickle=False)
    assert len(saved["model"]) > 20 and len(saved["optimizer"]) > 20
    for name, arrays in saved.items():
        names = [k for k in restored.files if k.startswith(name + "/")]
        assert len(names) == len(arrays), name
        for i, expected in enumerate(arrays):
            actual = restored[f"{name}/{i}"]
            assert actual.shape == expected.shape, (name, i)
            np.testing.assert_array_equal(
                actual.astype(expected.dtype), expected, f"{name}/{i}"
            )
    # The run goes on from step 8 to the end on JAX: epoch 1 as
    # TensorFlow recorded it, epoch 2 finished, epoch 3 trained.
    history = facts["history"]
    assert [h["epoch"] for h in history] == [1, 2, 3]
    assert [h["steps"] for h in history] == [6, 6, 6]
    assert facts["final_step"] == 18
    assert history[0] == tensorflow_history[0]
    losses = [h["loss"] for h in history]
    assert all(np.isfinite(losses)) and losses[2] < losses[0], losses


def test_a_damaged_checkpoint_is_refused(killed_on_tensorflow, tmp_path):
    from keras_elmo.training.checkpoints import CheckpointStore
    from keras_elmo.training.checkpoints import RunMismatch

    folder = tmp_path / "checkpoints"
    shutil.copytree(killed_on_tensorflow / "run" / "checkpoints", folder)
    latest = tf.train.latest_checkpoint(str(folder))
    data = folder / (os.path.basename(latest) + ".data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte in a weight
    data.write_bytes(bytes(raw))
    model, optimizer = _tiny_model(killed_on_tensorflow)
    store = CheckpointStore(str(folder), 3, model, optimizer)
    with pytest.raises(RunMismatch) as caught:
        store.restore()
    message = str(caught.value)
    assert f"Cannot resume from {latest!r}" in message
    assert "checksum" in message and "`force=True`" in message


def test_a_checkpoint_of_another_architecture_is_refused(
    killed_on_tensorflow,
):
    from keras_elmo.training.checkpoints import CheckpointStore
    from keras_elmo.training.checkpoints import RunMismatch

    folder = killed_on_tensorflow / "run" / "checkpoints"
    latest = tf.train.latest_checkpoint(str(folder))
    model, optimizer = _tiny_model(killed_on_tensorflow, lstm_units=24)
    store = CheckpointStore(str(folder), 3, model, optimizer)
    with pytest.raises(RunMismatch) as caught:
        store.restore()
    message = str(caught.value)
    assert f"Cannot resume from {latest!r}" in message
    assert "model variables" in message and "expected" in message


def _tiny_model(work, **overrides):
    """The run's model and optimizer (built as `TrainingLoop._build`
    does), its architecture changed by `overrides`."""
    import dataclasses

    from keras_elmo.config import BiLMConfig
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.models.bilm import BiLM
    from keras_elmo.models.language_model import BiLMLanguageModel
    from keras_elmo.training.sparse_adagrad import make_optimizer
    from keras_elmo.training.training_config import TrainingConfig

    settings = TrainingConfig(
        train=str(work / "corpus.txt"), vocab="v", out_dir=str(work)
    )
    architecture = dataclasses.replace(
        BiLMConfig.from_architecture("tiny"), **overrides
    )
    words = len(Vocabulary.load(str(work / "vocab.txt")))
    model = BiLMLanguageModel(BiLM(architecture, dropout=0.1), words)
    optimizer = make_optimizer(settings.optimizer, settings.learning_rate)
    optimizer.build(model.trainable_variables)
    return model, optimizer
