"""Atomic writes: SIGKILL a writer mid-write; the destination keeps the old
file (or gets the complete new one), never a half-written one.

Writers: `save_bilm_hdf5` / `BiLM.save_allennlp` (weights + options),
`save_softmax_hdf5`, `Vocabulary.save`, `.keras` saves
(`save_keras_atomically`), `export_saved_model` and `keras-elmo embed`
outputs. Training checkpoints are covered by
`tests/training/fault_test.py` (SIGKILL mid-epoch, then resume).
"""

import glob
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.utils.atomic import save_keras_atomically
from keras_elmo.weights.hdf5 import save_softmax_hdf5
from tests.robustness.atomic_kill_child import NAMES
from tests.robustness.case_table import VOCAB

pytestmark = pytest.mark.crash_sweep

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# Where each interrupted writer leaves its temporary (never at the
# destination name).
TEMPORARY = {
    "weights": ".weights.hdf5.*.tmp",
    "options": ".options.json.*.tmp",
    "softmax": ".softmax.hdf5.*.tmp",
    "vocabulary": ".vocab.txt.*.tmp",
    "keras": ".bilm.keras.*.tmp.keras",
    "export": ".savedmodel.*.tmp",
    "embed": "vectors.hdf5.partial",
}
CHEAP = ("weights", "options", "softmax", "vocabulary")


def write_old_files(workdir, bilm, language_model, saved_model_path=None):
    path = {k: os.path.join(workdir, v) for k, v in NAMES.items()}
    bilm.save_allennlp(path["options"], path["weights"])
    save_softmax_hdf5(language_model.softmax, path["softmax"])
    Vocabulary(VOCAB).save(path["vocabulary"])
    if saved_model_path is None:
        return path
    save_keras_atomically(bilm, path["keras"])
    shutil.copytree(saved_model_path, path["export"])
    with h5py.File(path["embed"], "w") as f:
        f.create_dataset("old", data=np.arange(3.0))
    with open(path["embed_input"], "w") as f:
        f.write("a b\nc d e\nf\n")
    return path


def snapshot(path):
    """`{relative path: bytes}` of a file or a directory tree."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return {"": f.read()}
    out = {}
    for root, _, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                out[os.path.relpath(full, path)] = f.read()
    return out


def start_child(mode, workdir):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([REPO, HERE, env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, os.path.join(HERE, "atomic_kill_child.py"), mode]
        + [workdir],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=workdir,
    )


def wait_for(process, word, seen, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line.strip())
        if line.strip() == word:
            return
    process.kill()
    pytest.fail(f"child never printed {word}: {seen}")


def kill(process):
    process.send_signal(signal.SIGKILL)
    process.wait(60)
    assert process.returncode == -signal.SIGKILL


@pytest.fixture
def old_files(tmp_path, tiny_bilm, language_model, saved_model_path):
    return write_old_files(
        str(tmp_path), tiny_bilm, language_model, saved_model_path
    )


def test_kill_mid_write_keeps_every_old_file(tmp_path, old_files):
    before = {name: snapshot(old_files[name]) for name in TEMPORARY}
    process = start_child("block", str(tmp_path))
    seen = []
    wait_for(process, "BLOCKED", seen)
    kill(process)
    assert seen[-1] == "BLOCKED" and "FINISHED" not in seen
    for name, pattern in TEMPORARY.items():
        # The writer was caught mid-write: its temporary is there ...
        assert glob.glob(os.path.join(str(tmp_path), pattern)), name
        # ... and the destination is exactly the old file.
        assert snapshot(old_files[name]) == before[name], name


def hdf5_arrays(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda k, v: (
                out.__setitem__(k, v[...])
                if isinstance(v, h5py.Dataset)
                else None
            )
        )
    return out


def same_file(a, b):
    if a.endswith(".hdf5"):
        x, y = hdf5_arrays(a), hdf5_arrays(b)
        return sorted(x) == sorted(y) and all(
            np.array_equal(x[k], y[k]) for k in x
        )
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()


@pytest.mark.parametrize("seed", [0])
def test_kill_at_a_random_moment_leaves_old_or_new(
    tmp_path, tiny_bilm, language_model, seed
):
    workdir = str(tmp_path)
    old_files = write_old_files(workdir, tiny_bilm, language_model)
    saved = os.path.join(workdir, "old")
    os.makedirs(saved)
    for name in CHEAP:
        shutil.copy(old_files[name], os.path.join(saved, NAMES[name]))
    process = start_child("loop", workdir)
    wait_for(process, "READY", [])
    time.sleep(random.Random(seed).uniform(0.05, 1.5))
    kill(process)
    for name in CHEAP:
        target = old_files[name]
        old = os.path.join(saved, NAMES[name])
        new = os.path.join(workdir, "new", NAMES[name])
        if name != "options":  # same preset, same options
            assert not same_file(old, new), name  # the versions differ
        assert same_file(target, old) or same_file(target, new), name
