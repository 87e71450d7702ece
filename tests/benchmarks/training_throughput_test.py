"""benchmarks/training_throughput.py --text: every loop, real-token counts."""

import gzip
import json

import pytest

from tests.benchmarks.scripts import SAMPLE
from tests.benchmarks.scripts import load_benchmark


@pytest.mark.large
def test_text_mode_times_the_three_steps_on_the_real_tokens(tmp_path):
    results = tmp_path / "training.json"
    load_benchmark("training_throughput").main(
        [
            "--text", SAMPLE,
            "--preset", "tiny",
            "--lines", "20",
            "--runs", "1",
            "--vocabulary", "300",
            "--num-sampled", "32",
            "--json", str(results),
        ]
    )  # fmt: skip
    payload = json.loads(results.read_text())
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        sentences = [line.split() for line in f if len(line.split()) >= 3]
    tokens = sum(min(len(s), 64) for s in sentences[:20])
    runs = {(r["workload"], r["bilstm_loop"]): r for r in payload["results"]}
    assert set(runs) == {
        (w, loop)
        for w in ("file", "sorted")
        for loop in ("packed", "padded", "before")
    }
    for run in runs.values():
        assert run["tokens"] == tokens
        assert len(run["seconds_per_pass"]) == 1
        seconds = run["seconds_per_pass"][0]
        assert run["tokens_per_s"] == pytest.approx(tokens / seconds, 1e-3)
    # Sorting by length can only remove padding.
    assert (
        runs["sorted", "packed"]["padded_positions"]
        <= runs["file", "packed"]["padded_positions"]
    )
    for workload in ("file", "sorted"):
        summary = payload["summary"][workload]
        speed = {
            loop: runs[workload, loop]["tokens_per_s"]
            for loop in ("packed", "padded", "before")
        }
        real = runs[workload, "packed"]["real_fraction"]
        assert summary["padding_saved"] == pytest.approx(1 - real, abs=1e-4)
        assert summary["packed_vs_before"] == pytest.approx(
            speed["packed"] / speed["before"], abs=1e-3
        )
        assert summary["packed_vs_padded"] == pytest.approx(
            speed["packed"] / speed["padded"], abs=1e-3
        )
        assert summary["target_met"] == (
            summary["packed_vs_before"] - 1 >= summary["padding_saved"]
        )
    assert payload["provenance"]["command"]
