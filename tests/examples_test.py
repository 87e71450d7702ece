"""Smoke-runs the example scripts with tiny settings."""

import importlib.util
import os

import numpy as np
import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def load_example(name):
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(EXAMPLES, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_embed_sentences(capsys):
    vectors = load_example("embed_sentences").main(
        ["--sentence", "a b c", "--sentence", "d"]
    )
    assert vectors.shape == (2, 3, 32)
    assert np.all(vectors[1, 1:] == 0.0)
    assert "a b c" in capsys.readouterr().out


@pytest.mark.large
def test_convert_allennlp_weights(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    diff = load_example("convert_allennlp_weights").main(
        ["--options", options, "--weights", weights, "--out-dir", str(tmp_path)]
    )
    assert diff == 0.0
    assert sorted(os.listdir(tmp_path)) == [
        "bilm.keras",
        "options.json",
        "weights.hdf5",
    ]
