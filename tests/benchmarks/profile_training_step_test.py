"""benchmarks/profile_training_step.py: every part, and the remainder."""

import json

import pytest

from tests.benchmarks.scripts import SAMPLE
from tests.benchmarks.scripts import load_benchmark


@pytest.mark.large
def test_parts_and_the_rest_add_up_to_the_step(tmp_path):
    results = tmp_path / "profile.json"
    load_benchmark("profile_training_step").main(
        [
            "--text", SAMPLE,
            "--preset", "tiny",
            "--lines", "20",
            "--runs", "2",
            "--vocabulary", "300",
            "--num-sampled", "32",
            "--results", str(results),
        ]
    )  # fmt: skip
    payload = json.loads(results.read_text())
    parts = payload["parts"]
    assert list(parts) == [
        "token_layer", "bilstm", "softmax", "optimizer", "step", "rest",
    ]  # fmt: skip
    step = parts["step"]["seconds_median"]
    assert sum(
        parts[n]["seconds_median"]
        for n in ("token_layer", "bilstm", "softmax", "optimizer", "rest")
    ) == pytest.approx(step, abs=1e-3)
    for name in ("token_layer", "bilstm", "softmax", "optimizer", "step"):
        assert len(parts[name]["seconds_per_pass"]) == 2
        assert parts[name]["seconds_median"] > 0
    assert parts["step"]["share_of_step"] == 1.0
    tokens = payload["workload"]["tokens"]
    assert payload["tokens_per_s"] == pytest.approx(tokens / step, rel=1e-2)
