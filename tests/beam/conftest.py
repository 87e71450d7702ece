"""Fixtures of the Beam tests: the input corpus and `keras-elmo embed`'s
reference output for it.
"""

import pytest

from keras_elmo.cli.main import main
from tests.beam.corpus import write_corpus


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
