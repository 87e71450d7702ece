"""benchmarks/cli_help.py: which helps it times, its rows, its import
check (which sees TensorFlow where a command loads it), its results
file. No timing is asserted."""

import json

import pytest

from keras_elmo.cli.main import COMMANDS
from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def script():
    return load_benchmark("cli_help")


def test_every_command_help_is_timed(script):
    assert script.help_commands() == [["--help"]] + [
        [name, "--help"] for name in COMMANDS
    ]
    assert len(COMMANDS) == 10


def test_a_row_holds_the_runs_their_median_and_the_imports(script):
    row = script.summarize(
        ["embed", "--help"], [0.30004, 0.1, 0.2], ["json", "keras_elmo"]
    )
    assert row == {
        "command": "keras-elmo embed --help",
        "seconds": [0.3, 0.1, 0.2],
        "median_seconds": 0.2,
        "tensorflow_imported": False,
        "keras_imported": False,
    }
    row = script.summarize(["--help"], [0.5, 0.25], ["keras", "tensorflow"])
    assert row["median_seconds"] == 0.375
    assert row["tensorflow_imported"] and row["keras_imported"]


@pytest.mark.large
def test_the_import_check_sees_tensorflow_where_it_is_loaded(script):
    env = script.environment()
    assert "TF_CPP_MIN_LOG_LEVEL" not in env
    helped = script.imported_packages(["embed", "--help"], env)
    assert "keras_elmo" in helped
    assert "tensorflow" not in helped and "keras" not in helped
    # `presets` itself runs the library: the check must see TensorFlow.
    assert "tensorflow" in script.imported_packages(["presets"], env)


def test_results_file(script, tmp_path):
    out = tmp_path / "cli_help.json"
    payload = script.main(["--runs", "1", "--results", str(out)])
    written = json.loads(out.read_text())
    assert written["provenance"]["command"] == (
        f"python benchmarks/cli_help.py --runs 1 --results {out}"
    )
    assert {k: v for k, v in written.items() if k != "provenance"} == payload
    assert payload["runs"] == 1
    assert [r["command"] for r in payload["rows"]] == [
        "keras-elmo " + " ".join(args) for args in script.help_commands()
    ]
    assert all(len(r["seconds"]) == 1 for r in payload["rows"])
    assert payload["slowest_median_seconds"] == max(
        r["median_seconds"] for r in payload["rows"]
    )
    assert payload["any_tensorflow_imported"] is False
    # The command modules the timed processes ran are in its provenance.
    imported = written["provenance"]["imported"]
    assert "keras_elmo/cli/embed.py" in imported
    assert "keras_elmo/cli/train.py" in imported


def test_runs_must_be_positive(script):
    with pytest.raises(SystemExit):
        script.main(["--runs", "0"])
