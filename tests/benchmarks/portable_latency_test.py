"""benchmarks/portable_latency.py: its results file holds three runtimes'
percentiles, their deviation, the ratios of the printed p50s and each
serving process's peak memory."""

import json

import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.mark.large
def test_results_file_holds_the_three_runtimes(tmp_path, capsys):
    pytest.importorskip(
        "tf2onnx",
        reason="tf2onnx is not installed: pip install 'keras-elmo[test]'",
    )
    pytest.importorskip(
        "onnxruntime",
        reason="onnxruntime is not installed: pip install 'keras-elmo[test]'",
    )
    pytest.importorskip(
        "ai_edge_litert",
        reason="ai-edge-litert is not installed: pip "
        "install 'keras-elmo[test]'",
    )
    bench = load_benchmark("portable_latency")
    out = tmp_path / "latency.json"
    bench.main(
        ["--calls", "3", "--warmup", "1", "--tokens", "5", "--json", str(out)]
    )
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert sorted(result["ms"]) == ["litert", "onnx", "savedmodel"]
    assert result["tokens"] == 5 and result["calls"] == 3
    # One serving process per runtime and thread count, in 3 turns of 1.
    assert result["rounds"] == 3
    assert sorted(result["peak_rss_mb"]) == [
        "litert@1",
        "litert@2",
        "onnx@1",
        "onnx@2",
        "savedmodel",
    ]
    for name in ("onnx", "litert"):
        assert result["elmo_deviation_over_max"][name] <= 1e-5
        ratio = result["ms"]["savedmodel"]["p50"] / result["ms"][name]["p50"]
        assert result["savedmodel_p50_over"][name] == pytest.approx(
            ratio, rel=1e-2
        )
        assert f"savedmodel p50 / {name} p50:" in printed
