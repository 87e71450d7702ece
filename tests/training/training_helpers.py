"""Helpers for the training tests: the sample corpus and CLI runs."""

import os
import sys

import h5py
import numpy as np

from tests import cli_process

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
TRAIN = os.path.join(DATA, "en_pd_lm_sample.txt.gz")
VALID = os.path.join(DATA, "en_pd_lm_valid_sample.txt.gz")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def tiny_train_args(vocab, out, *flags):
    """`keras-elmo train` arguments for the tiny preset on the sample."""
    return [
        "train",
        "--train",
        TRAIN,
        "--vocab",
        vocab,
        "--architecture",
        "tiny",
        "--out",
        out,
        "--quiet",
        *flags,
    ]


def cli_command(*args):
    return [sys.executable, "-m", "keras_elmo.cli.main", *args]


def cli_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    # TensorFlow's start-up lines off (as the CLI has them by default)
    # whatever the test process has (`make test` exports 2).
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env.update(extra)
    return env


def run_cli(*args, **env):
    """`keras-elmo *args` in a process of its own (a fork of one that
    imported TensorFlow once: `tests.cli_process`)."""
    return cli_process.run(list(args), cli_env(**env), timeout=600)


def hdf5_arrays(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, obj: (
                out.__setitem__(name, np.asarray(obj[()]))
                if isinstance(obj, h5py.Dataset)
                else None
            )
        )
    return out
