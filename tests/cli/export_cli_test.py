"""`keras-elmo export`: TF Serving layout, --force, model sources, errors."""

import os
import shutil

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.cli import _model_args as model_args
from keras_elmo.cli.main import build_parser
from keras_elmo.cli.main import main

SENTENCES = ["The cat sat on the mat .", "Hello", "a b c"]


@pytest.mark.large
def test_export_writes_a_versioned_model_only_with_force(
    reference_weights, tmp_path, capsys
):
    options, weights = reference_weights("tiny")
    base = tmp_path / "elmo"
    (base / "1").mkdir(parents=True)
    (base / "1" / "saved_model.pb").write_bytes(b"an older export")
    args = ["export", "--options", options, "--weights", weights]
    args += ["--out", str(base), "--version", "1"]
    assert main(args) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert (base / "1" / "saved_model.pb").read_bytes() == b"an older export"

    assert main(args + ["--force"]) == 0
    assert str(base / "1") in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == ["elmo"]  # no temp dirs left
    assert sorted(os.listdir(base)) == ["1"]
    model = tf.saved_model.load(str(base / "1"))
    out = model.signatures["serving_default"](text=tf.constant(SENTENCES))
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    expected = bilm(keras_elmo.batch_to_ids([s.split() for s in SENTENCES]))
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        np.testing.assert_allclose(
            out[key].numpy(), np.asarray(expected[key]), atol=1e-5
        )


def _args(*argv):
    return build_parser().parse_args(["export", *argv, "--out", "unused"])


def test_model_sources(reference_weights, tmp_path, capsys):
    options, weights = reference_weights("tiny")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(options, run_dir / "options.json")
    shutil.copy(weights, run_dir / "weights.hdf5")
    bilm, description = model_args.load_bilm_from_flags(
        _args("--model", str(run_dir))
    )
    reference = keras_elmo.BiLM.from_allennlp(options, weights)
    for a, b in zip(bilm.weights, reference.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert description == f"model folder {run_dir}"

    # Random weights: an explicit choice, with a loud warning.
    with pytest.raises(ValueError, match="--random-weights tiny"):
        model_args.load_bilm_from_flags(_args("--preset", "tiny"))
    _, description = model_args.load_bilm_from_flags(
        _args("--random-weights", "tiny")
    )
    err = capsys.readouterr().err
    assert "WARNING: no trained model given" in err
    assert "RANDOMLY INITIALISED 'tiny'" in err
    assert description.startswith("RANDOMLY INITIALISED")


def test_export_errors_are_clear(reference_weights, tmp_path, capsys):
    options, weights = reference_weights("tiny")
    empty = tmp_path / "empty_run"
    empty.mkdir()
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine")
    cases = [
        (["--model", str(tmp_path / "missing")], "does not exist"),
        (["--model", str(empty)], "matches no known format"),
        (
            ["--model", str(empty), "--options", options, "--weights", weights],
            "received both",
        ),
        (["--options", options], "go together"),
        (["--version", "0"], "positive integer"),
    ]
    for argv, message in cases:
        out = str(tmp_path / "out")
        assert main(["export", *argv, "--out", out]) == 2, argv
        assert message in capsys.readouterr().err, argv
    argv = ["export", "--random-weights", "tiny", "--out", str(keep)]
    assert main(argv) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert (keep / "notes.txt").read_text() == "mine"


def test_help(capsys):
    for command in ("export", "embed"):
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0
        assert "usage: keras-elmo " + command in capsys.readouterr().out
