"""A finished `keras-elmo train` rerun says so in one line and changes
nothing; it keeps no optimizer state unless --keep-optimizer-state, and
a larger --epochs continues it only then (refused by name otherwise);
--force starts over; Ctrl-C prints one line naming the checkpoint kept
and exits 130."""

import hashlib
import json
import os
import sys

import pytest

from keras_elmo.cli.main import main
from keras_elmo.training import trainer as trainer_module
from keras_elmo.training.trainer import finished_model
from keras_elmo.weights import hdf5 as model_files
from tests.training.training_helpers import tiny_train_args

FLAGS = (
    "--steps-per-epoch",
    "2",
    "--batch-size",
    "8",
    "--checkpoint-every",
    "1",
)


def train(vocab, out, *flags):
    return main(tiny_train_args(vocab, out, *FLAGS, *flags))


def snapshot(out):
    """{relative path: (sha256, mtime_ns)} of every file under `out`."""
    found = {}
    for folder, _, files in os.walk(out):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                content = hashlib.sha256(f.read()).hexdigest()
            found[os.path.relpath(path, out)] = (
                content,
                os.stat(path).st_mtime_ns,
            )
    return found


def history(out):
    with open(os.path.join(out, "history.json"), encoding="utf-8") as f:
        return json.load(f)


def _datasets(path):
    import h5py

    found = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, item: (
                found.__setitem__(name, item[()])
                if isinstance(item, h5py.Dataset)
                else None
            )
        )
    return found


def assert_same_datasets(got, expected):
    import numpy as np

    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, name)


def stored(out):
    """{variable group: count} of the newest checkpoint in `out`."""
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(os.path.join(out, "checkpoints"))
    groups = {}
    for name, _ in tf.train.list_variables(latest):
        group = name.split("/")[0]
        groups[group] = groups.get(group, 0) + 1
    return latest, groups


@pytest.mark.large
def test_a_finished_rerun_changes_nothing(sample_vocab, tmp_path, capsys):
    import keras_elmo

    out = str(tmp_path / "run")
    assert train(sample_vocab, out, "--epochs", "1") == 0
    first = capsys.readouterr()
    assert json.loads(first.out)["epoch"] == 1
    before = snapshot(out)
    # The finished run kept one checkpoint, without the optimizer's state
    # (checkpoint-every 1: two steps, two checkpoints before the end).
    latest, groups = stored(out)
    assert os.path.basename(latest) == "ckpt-2"
    assert "optimizer_variables" not in groups
    assert groups["model_variables"] > 0 and groups["state"] > 0
    assert sorted(os.listdir(os.path.join(out, "checkpoints"))) == [
        "checkpoint",
        "ckpt-2.data-00000-of-00001",
        "ckpt-2.index",
    ]
    # The folder is a model.
    bilm = keras_elmo.BiLM.from_preset(out)
    assert bilm.config.lstm_units == 32

    assert train(sample_vocab, out, "--epochs", "1") == 0
    rerun = capsys.readouterr()
    assert rerun.out == ""  # no replayed epoch JSON
    assert rerun.err == (
        f"keras-elmo train: {out} already holds the finished model of this "
        "run (1 epoch); nothing to do (its optimizer state was not kept, so "
        "a larger --epochs cannot continue it; --force starts over).\n"
    )
    assert snapshot(out) == before  # not one byte or mtime changed

    # A larger --epochs cannot continue without the optimizer's state:
    # refused by name, nothing changed.
    assert train(sample_vocab, out, "--epochs", "2") == 2
    refused = capsys.readouterr()
    assert refused.out == ""
    assert refused.err.splitlines()[-1] + "\n" == (
        f"keras-elmo train: error: Cannot continue the run in {out!r} to "
        "--epochs 2: it finished after 1 epoch and kept its weights but "
        "not its optimizer's state (`--keep-optimizer-state` was off), "
        "which continuing it needs. Pass --force to start over, or "
        "fine-tune from its weights into another `--out` with "
        f"`--init-from` {out}/options.json {out}/weights.hdf5 "
        f"{out}/softmax.hdf5.\n"
    )
    assert snapshot(out) == before

    # Killed after the drop, before its model files: a rerun writes them
    # from the weights the checkpoint still holds, training nothing.
    weights = os.path.join(out, "weights.hdf5")
    kept, epochs = _datasets(weights), history(out)
    os.remove(weights)
    assert train(sample_vocab, out, "--epochs", "1") == 0
    # No epoch ran: the history and its last entry are the run's.
    assert json.loads(capsys.readouterr().out) == epochs[-1]
    assert history(out) == epochs
    assert_same_datasets(_datasets(weights), kept)

    # --force starts over: one epoch again, the model rewritten.
    assert train(sample_vocab, out, "--epochs", "1", "--force") == 0
    assert json.loads(capsys.readouterr().out)["epoch"] == 1
    assert [h["epoch"] for h in history(out)] == [1]


@pytest.mark.large
def test_a_run_that_keeps_its_optimizer_state_continues(
    sample_vocab, tmp_path, capsys
):
    out = str(tmp_path / "run")
    keep = "--keep-optimizer-state"
    assert train(sample_vocab, out, "--epochs", "1", keep) == 0
    assert json.loads(capsys.readouterr().out)["epoch"] == 1
    before = snapshot(out)
    latest, groups = stored(out)
    assert os.path.basename(latest) == "ckpt-2"
    assert groups["optimizer_variables"] > 0
    # Recent checkpoints kept as during the run (--keep-checkpoints 3).
    assert len([n for n in before if n.endswith(".index")]) == 2

    assert train(sample_vocab, out, "--epochs", "1") == 0
    assert capsys.readouterr().err.endswith(
        "nothing to do (a larger --epochs continues it; --force starts over).\n"
    )
    # A larger --epochs continues from the finished checkpoint; without
    # --keep-optimizer-state this run's end drops the state in turn.
    assert train(sample_vocab, out, "--epochs", "2") == 0
    assert json.loads(capsys.readouterr().out)["epoch"] == 2
    assert [h["epoch"] for h in history(out)] == [1, 2]
    paths = model_files.model_paths(out).values()
    assert all(
        os.stat(p).st_mtime_ns > before[os.path.basename(p)][1] for p in paths
    )
    latest, groups = stored(out)
    assert os.path.basename(latest) == "ckpt-4"
    assert "optimizer_variables" not in groups


@pytest.mark.large
def test_ctrl_c_in_train_names_the_checkpoint_kept(
    sample_vocab, tmp_path, monkeypatch, capsys
):
    out = str(tmp_path / "run")
    real = trainer_module.Trainer._step_applied
    steps = []

    def step_applied(self, *args):
        if len(steps) == 3:  # Ctrl-C in step 4; checkpoints after 1, 2, 3
            raise KeyboardInterrupt
        steps.append(1)
        return real(self, *args)

    monkeypatch.setattr(trainer_module.Trainer, "_step_applied", step_applied)
    argv = tiny_train_args(sample_vocab, out, *FLAGS, "--epochs", "2")
    monkeypatch.setattr(sys, "argv", ["keras-elmo", *argv])
    try:
        status = main()
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main(): a traceback")
    assert status == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1] == (
        f"keras-elmo train: interrupted: the checkpoint of step 3 is kept in "
        f"{out}/checkpoints; rerun the same command to resume from it"
    ), captured.err
    assert "Traceback" not in captured.err
    assert not os.path.exists(os.path.join(out, "weights.hdf5"))


def test_finished_model_needs_the_epochs_and_newer_model_files(tmp_path):
    out = str(tmp_path)
    checkpoint = tmp_path / "checkpoints" / "ckpt-4.npz"
    checkpoint.parent.mkdir()
    checkpoint.write_bytes(b"c")
    paths = list(model_files.model_paths(out).values())
    for path in paths[:-1]:
        open(path, "w").close()
    assert not finished_model(out, 2, 2, str(checkpoint))  # a file missing
    open(paths[-1], "w").close()
    assert finished_model(out, 2, 2, str(checkpoint))
    assert finished_model(out, 3, 2, str(checkpoint))
    assert not finished_model(out, 1, 2, str(checkpoint))  # more epochs
    assert finished_model(out, 1, 2, str(checkpoint), stopped=True)
    assert not finished_model(out, 2, 2, None)  # no checkpoint
    # A checkpoint newer than the model files: the model is an older run's.
    newer = os.stat(paths[0]).st_mtime_ns + 10**9
    os.utime(checkpoint, ns=(newer, newer))
    assert not finished_model(out, 2, 2, str(checkpoint))
