"""Fixtures of the Beam tests: the input corpus and `keras-elmo embed`'s
reference output for it; every test here is marked `engine` (it runs a
Beam pipeline or Beam's own code: `make test-fast` leaves them out).
"""

import os

import pytest

from keras_elmo.cli.main import main
from tests.beam.corpus import write_corpus

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Marks the tests of this folder `engine` (before `-m` selects)."""
    for item in items:
        if str(item.path).startswith(HERE + os.sep):
            item.add_marker(pytest.mark.engine)


@pytest.fixture(scope="module")
def corpus(reference_weights, tmp_path_factory):
    """Input files, the tiny model and `keras-elmo embed`'s HDF5 output
    for their concatenation (the reference)."""
    options, weights = reference_weights("tiny")
    directory = tmp_path_factory.mktemp("corpus")
    pattern, both, lines = write_corpus(str(directory))
    reference = str(directory / "reference.hdf5")
    model = ["--options", options, "--weights", weights]
    assert main(["embed", both, reference, "--batch-size", "16"] + model) == 0
    offsets, total = {}, 0
    for path in sorted(lines):
        offsets[path] = total
        total += len(lines[path])
    return {
        "pattern": pattern,
        "lines": lines,
        "offsets": offsets,
        "reference": reference,
        "model": model,
        "spec": {"options": options, "weights": weights},
    }
