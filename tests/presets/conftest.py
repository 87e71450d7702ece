"""Fixtures for preset tests: a local HTTP server (no network needed) and
a model folder (the one the entry-point tests, `one_loader_test.py` and
`one_resolver_test.py`, pass as a source)."""

import shutil

import pytest

from tests.presets.preset_server import Server


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


@pytest.fixture
def folder(reference_weights, tmp_path):
    """A folder holding the tiny reference weights as `options.json` and
    `weights.hdf5` (a fresh copy for each test)."""
    options, weights = reference_weights("tiny")
    path = tmp_path / "model"
    path.mkdir()
    shutil.copy(options, path / "options.json")
    shutil.copy(weights, path / "weights.hdf5")
    return str(path)
