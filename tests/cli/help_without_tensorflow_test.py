"""`keras-elmo --help` answers at once: no TensorFlow behind any help.

Each check runs a fresh Python (the test process has TensorFlow loaded
already), as the `keras-elmo` script does.
"""

import os
import subprocess
import sys

import pytest

from keras_elmo.cli import _library_values
from keras_elmo.cli.main import COMMANDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))


def _python(code, env=None):
    environment = dict(os.environ, PYTHONPATH=ROOT)
    for name in ("TF_CPP_MIN_LOG_LEVEL", "GLOG_minloglevel"):
        environment.pop(name, None)
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


HELP_ALL = f"""
import sys
from keras_elmo.cli.main import main
print("after import:", "tensorflow" in sys.modules, "keras" in sys.modules)
for argv in [["--help"]] + [[name, "--help"] for name in {sorted(COMMANDS)!r}]:
    try:
        main(argv)
    except SystemExit as e:
        assert e.code == 0, (argv, e.code)
print("after help:", "tensorflow" in sys.modules, "keras" in sys.modules)
"""


def test_no_help_imports_tensorflow_or_keras():
    result = _python(HELP_ALL)
    assert result.returncode == 0, result.stderr
    assert "after import: False False" in result.stdout
    assert "after help: False False" in result.stdout
    assert "usage: keras-elmo embed" in result.stdout
    assert "usage: keras-elmo train" in result.stdout
    assert result.stderr == ""


def test_help_shows_defaults():
    result = _python(HELP_ALL)
    text = " ".join(result.stdout.split())  # argparse wraps lines
    # embed: `--dtype`, `--batch-tokens`, `--batching` had no default shown.
    assert "Stored float type (Beam and Spark runs). (default: float32)" in text
    assert "(Beam runs). (default: 4096)" in text
    assert "(default: bundles)" in text
    # A help that already names its default does not get it twice.
    assert "(default: 0.5, most lines; 1 = never)." in text
    assert "(default: 0.5, most lines; 1 = never). (default" not in text


def test_library_values_are_the_library_values():
    from keras_elmo.config import ARCHITECTURES
    from keras_elmo.data import corpus_health

    assert _library_values.ARCHITECTURE_NAMES == tuple(sorted(ARCHITECTURES))
    for name in (
        "DEFAULT_MAX_INVALID_FRACTION",
        "DEFAULT_MAX_NUL_FRACTION",
        "DEFAULT_MAX_OOV_RATE",
    ):
        assert getattr(_library_values, name) == getattr(corpus_health, name)


def test_train_help_lists_every_training_config_field():
    import dataclasses

    from keras_elmo.cli import train
    from keras_elmo.training.training_config import TrainingConfig

    result = _python(HELP_ALL)
    flags = [train.flag_of(f.name) for f in dataclasses.fields(TrainingConfig)]
    assert len(flags) > 10
    for flag in flags:
        assert f"  {flag} " in result.stdout or f"  {flag}\n" in result.stdout


RUN_PRESETS = """
import sys
from keras_elmo.cli.main import main
status = main(sys.argv[1:])
print("tensorflow loaded:", "tensorflow" in sys.modules)
sys.exit(status)
"""


def _start_up_lines(stderr):
    """TensorFlow's own start-up lines in `stderr`: absl's `I0000`,
    `W0000`, `E0000` records, its notice before absl starts, and the
    oneDNN notice (printed on CPUs where oneDNN's optimisations are on by
    default, not on every CPU)."""
    return [
        line
        for line in stderr.splitlines()
        if line.startswith(("I0000", "E0000", "W0000"))
        or "oneDNN" in line
        or "absl::InitializeLog" in line
    ]


@pytest.mark.large
@pytest.mark.parametrize("verbose", [False, True])
def test_tensorflow_start_up_lines_only_with_verbose(verbose):
    code = RUN_PRESETS.replace(
        "sys.argv[1:]", repr(["-v"] * verbose + ["presets"])
    )
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert "tensorflow loaded: True" in result.stdout  # the API is loaded
    assert "elmo_small_en" in result.stdout
    noisy = _start_up_lines(result.stderr)
    if verbose:
        assert noisy != []  # TensorFlow's own lines are back with -v
    else:
        assert noisy == [], noisy


@pytest.mark.large
def test_a_user_setting_of_tf_cpp_min_log_level_wins():
    code = RUN_PRESETS.replace("sys.argv[1:]", repr(["presets"]))
    result = _python(code, env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert result.returncode == 0, result.stderr
    # TensorFlow's start-up lines show: the CLI did not raise the level.
    assert _start_up_lines(result.stderr) != [], result.stderr
