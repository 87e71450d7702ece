"""benchmarks/matmul_dtypes.py: both dtypes at every shape of a preset."""

import json

import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.mark.large
def test_rates_and_ratios_at_the_presets_shapes(tmp_path):
    results = tmp_path / "matmul.json"
    script = load_benchmark("matmul_dtypes")
    script.main(["--preset", "tiny", "--runs", "2", "--results", str(results)])
    payload = json.loads(results.read_text())
    import keras_elmo

    cfg = keras_elmo.BiLMConfig.from_architecture("tiny")
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
    kernels = payload["onednn_kernels"]
    assert set(kernels) == {"float32", "bfloat16"}
    for found in kernels.values():
        assert set(found) == {"isa", "kernels"}


def test_parse_onednn_verbose_names_kernels_and_isa():
    script = load_benchmark("matmul_dtypes")
    text = "\n".join(
        [
            "onednn_verbose,v1,info,oneDNN v3.7.3 (commit N/A)",
            "onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with float16, "
            "Intel DL Boost and bfloat16 support ",
            "onednn_verbose,v1,primitive,exec,cpu,matmul,"
            "brg_matmul:avx512_core_bf16,undef,src:bf16::blocked:ab::f0,,,"
            "8x4:4x16,0.3",
            "onednn_verbose,v1,primitive,exec,cpu,matmul,"
            "brg_matmul:avx512_core_bf16,undef,src:bf16::blocked:ab::f0,,,"
            "8x4:4x16,0.2",
            "onednn_verbose,v1,primitive,exec,cpu,gemm_api,,undef,"
            "src_f32::blocked:ab:f0,,,8x4:4x16,0.1",
            "not a oneDNN line",
        ]
    )
    assert script.parse_onednn_verbose(text) == {
        "isa": "Intel AVX-512 with float16, Intel DL Boost and bfloat16 "
        "support",
        "kernels": ["matmul:brg_matmul:avx512_core_bf16", "gemm_api"],
    }
    assert script.parse_onednn_verbose("") == {"isa": None, "kernels": []}
