"""benchmarks/matmul_dtypes.py: both dtypes at every shape of a preset."""

import json

import pytest

from tests.benchmarks.scripts import load_benchmark


def test_rates_and_ratios_at_the_presets_shapes(tmp_path):
    results = tmp_path / "matmul.json"
    script = load_benchmark("matmul_dtypes")
    script.main(["--preset", "tiny", "--runs", "2", "--results", str(results)])
    payload = json.loads(results.read_text())
    import keras_elmo

    cfg = keras_elmo.BiLMConfig.from_preset("tiny")
    p, h = cfg.projection_dim, cfg.lstm_units
    matmuls = payload["matmuls"]
    assert matmuls["lstm_input_64x20"]["shape_mkn"] == [1280, 2 * p, 4 * h]
    assert matmuls["lstm_recurrent_64"]["shape_mkn"] == [64, p, 4 * h]
    for entry in matmuls.values():
        rate = entry["gflop_per_s"]
        assert rate["float32"] > 0 and rate["bfloat16"] > 0
        assert entry["bfloat16_over_float32"] == pytest.approx(
            rate["bfloat16"] / rate["float32"], abs=2e-3
        )
    assert set(payload["cpu_flags"]) == {"amx_bf16", "avx512_bf16"}
