"""benchmarks/training_backends.py: fresh `keras-elmo train` runs per
backend, read back from their own histories, summarised exactly."""

import json

import pytest

from tests.benchmarks.scripts import SAMPLE
from tests.benchmarks.scripts import load_benchmark


def _run(rate, loss):
    return {
        "epochs": [
            {"tokens_per_second": 1.0, "loss": 9.0},
            {"tokens_per_second": rate, "loss": loss},
        ]
    }


def test_summary_is_the_median_last_epoch_and_its_ratio_per_round():
    script = load_benchmark("training_backends")
    rounds = [
        {"tensorflow": _run(100.0, 5.0), "jax": _run(50.0, 5.1)},
        {"tensorflow": _run(200.0, 5.0), "jax": _run(150.0, 5.2)},
        {"tensorflow": _run(300.0, 5.0), "jax": _run(60.0, 5.3)},
    ]
    summary = script.summarise(rounds, ["tensorflow", "jax"])
    assert summary["tokens_per_second_median"] == {
        "tensorflow": 200.0,
        "jax": 60.0,
    }
    assert summary["ratios_to_tensorflow"]["jax"] == {
        "ratio_of_medians": 0.3,
        "per_round_min": 0.2,  # 60 / 300
        "per_round_max": 0.75,  # 150 / 200
    }
    assert (
        summary["ratios_to_tensorflow"]["tensorflow"]["ratio_of_medians"] == 1
    )
    assert summary["last_epoch_loss"]["jax"] == [5.1, 5.2, 5.3]


def test_refuses_an_unknown_backend(tmp_path, capsys):
    script = load_benchmark("training_backends")
    with pytest.raises(SystemExit):
        script.main(["--backends", "tensorflow,mxnet", "--out", str(tmp_path)])
    error = capsys.readouterr().err
    assert "--backends" in error and "'mxnet'" in error


@pytest.mark.engine  # trains in a TensorFlow and a JAX process
def test_each_backend_trains_from_the_readme_command(tmp_path):
    out = tmp_path / "training_backends.json"
    script = load_benchmark("training_backends")
    script.main(
        [
            "--backends", "tensorflow,jax",
            "--config", "tiny",
            "--text", SAMPLE,
            "--lines", "40",
            "--steps", "2",
            "--epochs", "2",
            "--rounds", "1",
            "--out", str(out),
        ]
    )  # fmt: skip
    payload = json.loads(out.read_text())
    assert payload["skipped"] == {}
    assert payload["lines"] == 40 and payload["epochs"] == 2
    for backend in ("tensorflow", "jax"):
        epochs = payload["rounds"][0][backend]["epochs"]
        assert len(epochs) == 2
        assert all(e["tokens_per_second"] > 0 for e in epochs)
        # Two steps of Adam from a random start: a loss near log(V).
        assert 0 < epochs[-1]["loss"] < 12
    ratios = payload["summary"]["ratios_to_tensorflow"]
    assert ratios["tensorflow"]["ratio_of_medians"] == 1.0
    assert ratios["jax"]["ratio_of_medians"] > 0
    assert payload["provenance"]["modules"]
