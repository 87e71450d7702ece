"""A Spark folder output records what produced it (the manifest's
`run`), and a rerun over it names what changed since; `--force` starts
over. Spark runs in local mode (`local[1]`; needs Java 17+)."""

import hashlib
import json
import os
import shutil
import sys

import h5py
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.embedding.run_identity import RUN_ATTRIBUTE
from keras_elmo.embedding.run_identity import hdf5_run_record
from keras_elmo.embedding.run_identity import input_identity
from tests.conftest import flip_last_byte

pytestmark = [pytest.mark.large, pytest.mark.engine]


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _manifest(output):
    with open(os.path.join(output, "_manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def _expected_run(options, weights, path):
    """The record of a `--top` run of the tiny model over `path`."""
    return {
        "model": {
            "kind": "files",
            "format": "allennlp",
            "options": _sha256(open(options, "rb").read()),
            "weights": _sha256(open(weights, "rb").read()),
            "vocabulary": None,
        },
        "input": {"files": {str(path): input_identity(str(path))}},
        "settings": {"layers": "top", "dtype": "float32"},
        "version": keras_elmo.__version__,
    }


def test_the_manifest_records_the_run_and_a_rerun_names_what_changed(
    reference_weights, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    options, weights = reference_weights("tiny")
    path = tmp_path / "in.txt"
    lines = b"the cat sat\n\nzz top\n"
    path.write_bytes(lines)
    output = str(tmp_path / "out")
    spark = ["--spark-master", "local[1]", "--top"]
    spark += ["--spark-conf", "spark.ui.enabled=false"]
    argv = ["embed", str(path), output, "--options", options]
    argv += ["--weights", weights] + spark
    assert main(argv) == 0
    run = _manifest(output)["run"]
    assert run == _expected_run(options, weights, path)
    assert run["input"]["files"][str(path)]["sha256"] == _sha256(lines)
    capsys.readouterr()

    # The same run again: refused before Spark starts; nothing changed.
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "exists; pass --force" in err
    assert "same model, input files, settings and version" in err

    # Another model (one byte of the weights) and an edited line with the
    # same token count: both named.
    changed = tmp_path / "changed.hdf5"
    shutil.copy(weights, changed)
    flip_last_byte(changed)
    edited = b"the dog sat\n\nzz top\n"
    path.write_bytes(edited)
    other = ["embed", str(path), output, "--options", options]
    other += ["--weights", str(changed)] + spark
    assert main(other) == 2
    err = capsys.readouterr().err
    assert "It is a finished run; changed: the model (files, " in err
    assert (
        f"the content of input file {path} (size 20 -> 20 bytes, sha256 "
        f"{_sha256(lines)[:12]} -> {_sha256(edited)[:12]})" in err
    )
    assert _manifest(output)["run"] == run  # untouched

    # --force starts over and records the new run.
    assert main(other + ["--force"]) == 0
    run = _manifest(output)["run"]
    assert run["model"]["weights"] == _sha256(changed.read_bytes())
    assert run["input"]["files"][str(path)]["sha256"] == _sha256(edited)


def test_an_hdf5_output_records_the_run_beside_the_allennlp_layout(
    reference_weights, tmp_path, monkeypatch
):
    """An `.hdf5` OUTPUT keeps the record a folder's manifest has, as the
    root attribute `keras_elmo_run`; the datasets are those of the
    `allennlp elmo` layout and nothing else."""
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    options, weights = reference_weights("tiny")
    path = tmp_path / "in.txt"
    path.write_bytes(b"the cat sat\n\nzz top\n")
    output = str(tmp_path / "out.hdf5")
    argv = ["embed", str(path), output, "--options", options]
    argv += ["--weights", weights, "--spark-master", "local[1]", "--top"]
    assert main(argv + ["--spark-conf", "spark.ui.enabled=false"]) == 0
    with h5py.File(output, "r") as f:
        assert sorted(f) == ["0", "1", "2", "sentence_to_index"]
        assert f["0"].shape == (3, 32) and f["1"].shape == (0, 32)
        assert sorted(f.attrs) == [RUN_ATTRIBUTE] == ["keras_elmo_run"]
    assert hdf5_run_record(output) == _expected_run(options, weights, path)
