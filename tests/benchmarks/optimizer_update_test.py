"""benchmarks/optimizer_update.py: both updates timed, and equal."""

import json

from tests.benchmarks.scripts import load_benchmark


def test_dense_and_sparse_updates_agree_and_are_timed(tmp_path):
    results = tmp_path / "update.json"
    script = load_benchmark("optimizer_update")
    medians, difference = script.main(
        [
            "--vocabulary",
            "300",
            "--dim",
            "8",
            "--rows",
            "40",
            "--runs",
            "2",
            "--results",
            str(results),
        ]
    )
    payload = json.loads(results.read_text())
    assert payload["vocabulary"] == 300 and payload["rows_per_step"] == 40
    for name in ("dense", "sparse"):
        assert len(payload["seconds"][name]["per_update"]) == 2
        assert medians[name] > 0
    # Three updates of the same maths on float32 weights of ~0.05.
    assert difference < 1e-6
    assert payload["max_abs_difference"] == difference
