"""Shared test fixtures: the AllenNLP reference weights, a seeded `tiny`
BiLM, padded string tokens and the examples folder on `sys.path`; and how
`make test` shares the tests between pytest-xdist's workers
(`tests/xdist_plan.py`)."""

import importlib.util
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from tests import jax_compile_cache
from tests.fixtures.weights_digest import expected_digest
from tests.fixtures.weights_digest import weights_digest
from tests.xdist_plan import pytest_collection_modifyitems  # noqa: F401
from tests.xdist_plan import pytest_xdist_make_scheduler  # noqa: F401

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
EXAMPLES = os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "examples")
)


@pytest.fixture(scope="session")
def reference_weights(tmp_path_factory):
    """`name -> (options_path, weights_path)`, regenerated on demand.

    The seeded random weights AllenNLP was run on are rebuilt with the
    committed copy of the harness's `make_weights.py` and checked against
    the committed content digest, so the parity tests compare against the
    exact file AllenNLP read.
    """
    out_dir = tmp_path_factory.mktemp("reference_weights")
    made = {}

    def get(name):
        if name not in made:
            base, activation = name, "relu"
            if name.endswith("_tanh"):
                base, activation = name[: -len("_tanh")], "tanh"
            subprocess.run(
                [
                    sys.executable,
                    os.path.join(FIXTURES, "make_weights.py"),
                    base,
                    "--activation",
                    activation,
                    "--out-dir",
                    str(out_dir),
                ],
                check=True,
                capture_output=True,
            )
            options = out_dir / f"{name}_options.json"
            weights = out_dir / f"{name}_weights.hdf5"
            assert weights_digest(weights) == expected_digest(name), name
            made[name] = (str(options), str(weights))
        return made[name]

    return get


def tiny_bilm(seed=0, **kwargs):
    """A `tiny` BiLM with random weights drawn after `set_random_seed(seed)`
    (`kwargs` go to the constructor: `stateful`, `dtype`, ...)."""
    keras.utils.set_random_seed(seed)
    return keras_elmo.BiLM(
        keras_elmo.BiLMConfig.from_architecture("tiny"), **kwargs
    )


def flip_last_byte(path):
    """Changes one bit of the file's last byte in place: the same size,
    another sha256 (an edited weights file of the same shapes)."""
    data = bytearray(open(path, "rb").read())
    data[-1] ^= 1
    with open(path, "wb") as f:
        f.write(bytes(data))


def padded(sentences):
    """Lists of str tokens -> a `[B, T]` string tensor padded with `""`."""
    steps = max((len(s) for s in sentences), default=0)
    rows = [list(s) + [""] * (steps - len(s)) for s in sentences]
    return tf.constant(np.array(rows, dtype=object).reshape(-1, steps))


def load_example(name):
    """`examples/{name}.py` as a fresh module (not put on `sys.path`)."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(EXAMPLES, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def examples_on_path(monkeypatch):
    """The examples that import their helper modules (pos_data, bilm_cache,
    ...) find them the way `python examples/x.py` does: from the examples
    folder, put first on `sys.path` for each test. The examples tests use
    it on every test (`pytest.mark.usefixtures`)."""
    monkeypatch.syspath_prepend(EXAMPLES)


def pytest_configure(config):
    """One JAX compilation cache for the run's JAX subprocesses
    (`tests/jax_compile_cache.py`); set before pytest-xdist starts its
    workers, which inherit it."""
    jax_compile_cache.start()


def pytest_unconfigure(config):
    jax_compile_cache.stop()
