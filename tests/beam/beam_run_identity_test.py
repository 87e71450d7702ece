"""A Beam output records what produced it (the manifest's `run`), and a
rerun over it names what changed since; `--force` starts over.

Runner: the BundleBasedDirectRunner (one process, no network).
"""

import gzip
import hashlib
import json
import os
import shutil

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from tests.conftest import flip_last_byte

pytestmark = pytest.mark.large

RUNNER = ["--runner", "BundleBasedDirectRunner", "--top"]


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def _manifest(output):
    with open(os.path.join(output, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def test_the_manifest_records_the_run_and_a_rerun_names_what_changed(
    reference_weights, tmp_path, capsys
):
    options, weights = reference_weights("tiny")
    inputs = tmp_path / "in"
    inputs.mkdir()
    plain = b"the cat sat\n\nzz top\n"
    packed = b"a gzip line\nlast line"
    (inputs / "a.txt").write_bytes(plain)
    with gzip.open(inputs / "b.txt.gz", "wb") as f:
        f.write(packed)
    output = str(tmp_path / "out")
    model = ["--options", options, "--weights", weights]
    argv = ["embed", str(inputs / "*"), output] + model + RUNNER
    assert main(argv) == 0
    manifest = _manifest(output)
    run = manifest["run"]
    a, b = str(inputs / "a.txt"), str(inputs / "b.txt.gz")
    assert run["model"] == {
        "kind": "files",
        "format": "allennlp",
        "options": _sha256(open(options, "rb").read()),
        "weights": _sha256(open(weights, "rb").read()),
        "vocabulary": None,
    }
    assert sorted(run["input"]["files"]) == [a, b]
    # A plain file: the sha256 of its bytes; a .gz file: of its content.
    assert run["input"]["files"][a]["sha256"] == _sha256(plain)
    assert run["input"]["files"][a]["size"] == len(plain)
    assert run["input"]["files"][b]["sha256"] == _sha256(packed)
    assert run["input"]["files"][b]["size"] == os.path.getsize(b)
    mtime = run["input"]["files"][a]["mtime_ns"]
    assert abs(mtime - os.stat(a).st_mtime_ns) < 1000  # a float's rounding
    assert run["settings"] == {"layers": "top", "dtype": "float32"}
    assert run["version"] == keras_elmo.__version__
    assert manifest["model_identity"]["kind"] == "bilm"  # the workers'
    capsys.readouterr()

    # The same run again: refused, and it says nothing changed.
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Pass --force" in err
    assert "same model, input files, settings and version" in err

    # Another model (one byte of the weights) and an edited line with the
    # same token count: both named.
    changed = tmp_path / "changed.hdf5"
    shutil.copy(weights, changed)
    flip_last_byte(changed)
    edited = b"the dog sat\n\nzz top\n"
    (inputs / "a.txt").write_bytes(edited)
    other = ["embed", str(inputs / "*"), output, "--options", options]
    other += ["--weights", str(changed)] + RUNNER
    assert main(other) == 2
    err = capsys.readouterr().err
    assert "It is a finished run; changed: the model (files, " in err
    assert (
        f"the content of input file {a} (size 20 -> 20 bytes, sha256 "
        f"{_sha256(plain)[:12]} -> {_sha256(edited)[:12]})" in err
    )
    assert "layers" not in err.split("changed:")[1]
    assert _manifest(output) == manifest  # untouched

    # --force starts over and records the new run.
    assert main(other + ["--force"]) == 0
    run = _manifest(output)["run"]
    assert run["model"]["weights"] == _sha256(changed.read_bytes())
    assert run["input"]["files"][a]["sha256"] == _sha256(edited)
