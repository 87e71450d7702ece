"""A command's output redirected to a file: the command's own lines only.

Each command runs as a newcomer runs it (no `TF_CPP_MIN_LOG_LEVEL` in the
environment), stdout and stderr into one file, which must hold no escape
sequence, no carriage return (progress bars), no TensorFlow/absl C++ line
(`I0000 ...`, `E0000 ...`, `W0000 ...`) and, for Spark and Beam, none of
the engine's own log lines, unless `-v` asks for them.
"""

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
ABSL_LINE = re.compile(r"^[IWEF]\d{4} ", re.MULTILINE)
# How both engines' manifests name `--random-weights tiny`, as load_spec
# does (`model_spec.describe_model`).
TINY = (
    "RANDOMLY INITIALISED 'tiny' architecture (seed 0): shapes and "
    "plumbing only, the vectors carry no meaning"
)


def run_redirected(args, tmp_path, name="log.txt"):
    """Runs `keras-elmo ARGS` with stdout and stderr into one file; returns
    (exit status, the file's text)."""
    environment = dict(os.environ, PYTHONPATH=ROOT)
    for variable in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_minloglevel"):
        environment.pop(variable, None)
    log = tmp_path / name
    with open(log, "wb") as f:
        status = subprocess.run(
            [sys.executable, "-m", "keras_elmo.cli.main"] + args,
            stdout=f,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=tmp_path,
            timeout=600,
        ).returncode
    return status, log.read_text(encoding="utf-8", errors="replace")


def assert_clean(text):
    assert "\x1b" not in text, text
    assert "\r" not in text, text
    assert not ABSL_LINE.search(text), text
    assert "absl::InitializeLog" not in text, text


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("a fine film\ndull\n", encoding="utf-8")
    return str(path)


@pytest.mark.large
def test_embed_and_presets_redirected(corpus, tmp_path):
    status, text = run_redirected(
        ["embed", corpus, "out.hdf5", "--random-weights", "tiny"], tmp_path
    )
    assert status == 0, text
    assert_clean(text)
    assert text.endswith("Wrote 2 sentences to out.hdf5\n")
    status, text = run_redirected(["presets"], tmp_path, "presets.txt")
    assert status == 0, text
    assert_clean(text)
    assert "elmo_small_en" in text


@pytest.mark.engine
def test_beam_run_redirected_holds_no_beam_lines_unless_verbose(
    corpus, tmp_path
):
    pytest.importorskip("apache_beam")
    argv = ["embed", corpus, "out", "--random-weights", "tiny"]
    argv += ["--runner", "DirectRunner"]
    status, text = run_redirected(argv, tmp_path)
    assert status == 0, text
    assert_clean(text)
    # The command's one line: no Beam record ("WARNING root: Resource
    # module is not available ..." per batch before).
    assert text == f"Wrote 2 sentences in 1 shards to {tmp_path}/out\n"
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["model"] == TINY
    # -v lets Beam's own records through: the quiet run's filter acted.
    status, text = run_redirected(
        ["-v"] + argv + ["--force"], tmp_path, "verbose.txt"
    )
    assert status == 0, text
    assert re.search(r"^(INFO|WARNING) (root|apache_beam)", text, re.M)


@pytest.mark.engine
def test_spark_run_redirected_holds_no_spark_lines(corpus, tmp_path):
    pytest.importorskip("pyspark")
    argv = ["embed", corpus, "out", "--random-weights", "tiny"]
    status, text = run_redirected(
        argv + ["--spark-master", "local[1]"], tmp_path
    )
    assert status == 0, text
    assert_clean(text)
    lines = text.splitlines()
    assert lines[-1] == f"Wrote 2 sentences to {tmp_path}/out"
    spark_lines = [
        line
        for line in lines
        if re.search(r"\b(WARN|INFO)\b|log4j|log level|\[Stage", line)
    ]
    assert not spark_lines, text
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert manifest["model"] == TINY


@pytest.mark.engine
def test_failing_beam_pipeline_is_told_by_its_cause_alone(corpus, tmp_path):
    # Workers that cannot load the model: the run's output is the cause,
    # one line, not Beam's ERROR record with a page of traceback.
    pytest.importorskip("apache_beam")
    options = os.path.join(
        ROOT, "keras_elmo", "presets", "elmo_small_en", "options.json"
    )
    weights = tmp_path / "weights.hdf5"
    weights.write_text("not HDF5", encoding="utf-8")
    argv = ["embed", corpus, "out", "--options", options]
    argv += ["--weights", str(weights), "--runner", "DirectRunner"]
    status, text = run_redirected(argv, tmp_path)
    assert status == 2, text
    assert text == (
        f"keras-elmo embed: error: Weights file '{weights}' is not an HDF5 "
        "file (expected the bilm-tf / AllenNLP `weights.hdf5` layout). "
        "[while running 'Embed/RunInference/BeamML_RunInference']\n"
    )
