"""benchmarks/simple_elmo_side_by_side.py: its keras_elmo workers and its
arithmetic (the simple_elmo worker needs the side venv; its outputs are
checked against keras_elmo in tests/models/bilm_warmup_test.py)."""

import json
import os
import sys

import numpy as np
import pytest

import keras_elmo
from keras_elmo.compat import simple_elmo
from keras_elmo.models.bilm import elmo_layers
from tests.benchmarks.scripts import BENCHMARKS
from tests.benchmarks.scripts import REPO
from tests.benchmarks.scripts import load_benchmark

SENTENCES = [["a", "b", "c"], ["Hello"], ["x", "y"], ["end", ".", "!", "?"]]


def _worker(script, mode, options, weights, sentences_path):
    env = dict(os.environ, PYTHONPATH=REPO)
    return script.Worker(
        mode,
        [
            sys.executable,
            os.path.join(BENCHMARKS, "simple_elmo_worker.py"),
            "--mode",
            mode,
            "--options",
            options,
            "--weights",
            weights,
            "--sentences",
            sentences_path,
            "--batch-size",
            "3",
        ],
        env=env,
    )


@pytest.mark.large  # two TensorFlow worker processes
def test_keras_elmo_workers(reference_weights, tmp_path):
    script = load_benchmark("simple_elmo_side_by_side")
    options, weights = reference_weights("tiny")
    sentences_path = tmp_path / "s.json"
    sentences_path.write_text(json.dumps(SENTENCES))
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    stateful = simple_elmo.embed_with_warmup(
        simple_elmo.stateful_copy(bilm), SENTENCES, batch_size=3
    )
    for mode in (
        "stateless",
        "stateless-every-product",
        "stateless-sorted",
        "stateful",
    ):
        worker = _worker(script, mode, options, weights, str(sentences_path))
        assert worker.ready["ready"]
        assert worker.ask("warm") == {"warm": True}
        timed = worker.ask("round")
        assert timed["tokens"] == 10 and timed["seconds"] > 0
        out = tmp_path / f"{mode}.npy"
        worker.ask(f"outputs {out}")
        assert worker.quit()["peak_rss_mb"] > 100
        real = np.load(out)
        assert real.shape == (10, 3, 32)
        start = 0
        for i, sentence in enumerate(SENTENCES):
            n = len(sentence)
            if mode.startswith("stateless"):
                layers = elmo_layers(bilm(keras_elmo.batch_to_ids([sentence])))
                expected = np.stack([np.asarray(x)[0] for x in layers], 1)
            else:
                expected = np.transpose(stateful[i], (1, 0, 2))
            np.testing.assert_allclose(
                real[start : start + n], expected, atol=1e-5
            )
            start += n


def test_agreement_and_summary():
    script = load_benchmark("simple_elmo_side_by_side")
    reference = np.zeros((4, 3, 2), np.float32)
    reference[:, :, 0] = [[1.0, 2.0, 4.0]] * 4
    ours = reference.copy()
    ours[2, 1, 0] += 0.5
    got = script.agreement(ours, reference)
    assert got["layer0"] == {"max_abs_diff": 0.0, "relative": 0.0}
    assert got["layer1"] == {"max_abs_diff": 0.5, "relative": 0.25}
    assert got["relative"] == 0.125 and got["max_abs_diff"] == 0.5
    rounds = [
        {
            "simple_elmo": {"tokens_per_s": 100.0},
            "simple_elmo/default-call": {"tokens_per_s": 80.0},
            "keras_elmo/stateless": {"tokens_per_s": 300.0},
            "keras_elmo/stateless-every-product": {"tokens_per_s": 250.0},
            "keras_elmo/stateless-sorted": {"tokens_per_s": 400.0},
            "keras_elmo/stateful": {"tokens_per_s": 150.0},
        },
        {
            "simple_elmo": {"tokens_per_s": 200.0},
            "simple_elmo/default-call": {"tokens_per_s": 100.0},
            "keras_elmo/stateless": {"tokens_per_s": 500.0},
            "keras_elmo/stateless-every-product": {"tokens_per_s": 450.0},
            "keras_elmo/stateless-sorted": {"tokens_per_s": 600.0},
            "keras_elmo/stateful": {"tokens_per_s": 250.0},
        },
    ]
    medians, ratios = script.summarise(rounds, list(script.WORKERS))
    assert medians == {
        "simple_elmo": 150.0,
        "simple_elmo/default-call": 90.0,
        "keras_elmo/stateless": 400.0,
        "keras_elmo/stateless-every-product": 350.0,
        "keras_elmo/stateless-sorted": 500.0,
        "keras_elmo/stateful": 200.0,
    }
    assert ratios["keras_elmo/stateless vs simple_elmo"] == {
        "ratio_of_medians": 2.667,
        "per_round_min": 2.5,
        "per_round_max": 3.0,
    }
    assert ratios["keras_elmo/stateless vs simple_elmo/default-call"] == {
        "ratio_of_medians": 4.444,
        "per_round_min": 3.75,
        "per_round_max": 5.0,
    }
    assert "simple_elmo/default-call vs simple_elmo" not in ratios


@pytest.mark.large  # exports four files, then reads two without TensorFlow
def test_portable_workers(reference_weights, tmp_path):
    pytest.importorskip("tf2onnx", reason="the ONNX export needs tf2onnx")
    pytest.importorskip("onnxruntime", reason="int8 ONNX needs onnxruntime")
    pytest.importorskip("ai_edge_litert", reason="LiteRT needs ai-edge-litert")
    script = load_benchmark("simple_elmo_side_by_side")
    options, weights = reference_weights("tiny")
    files = script.export_portable_files(options, weights, str(tmp_path))
    assert sorted(files) == sorted(script.PORTABLE)
    for name, exported in files.items():
        assert os.path.getsize(exported["path"]) == exported["bytes"]
    # int8 weights. The converter leaves tensors of up to 1,024 elements
    # float, and the int8 LiteRT file stores each LSTM matrix per
    # direction, so most of the tiny model's matrices stay float (76% of
    # the float file's bytes; elmo_small_en's int8 file is 27%).
    from ai_edge_litert.interpreter import Interpreter

    tensors = Interpreter(
        model_path=files["litert_int8"]["path"]
    ).get_tensor_details()
    assert any(t["dtype"] == np.int8 for t in tensors)
    assert not any(
        t["dtype"] == np.int8
        for t in Interpreter(
            model_path=files["litert"]["path"]
        ).get_tensor_details()
    )
    assert files["litert_int8"]["bytes"] < 0.8 * files["litert"]["bytes"]
    sentences_path = tmp_path / "s.json"
    sentences_path.write_text(json.dumps(SENTENCES))
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    expected = []
    for sentence in SENTENCES:
        layers = elmo_layers(bilm(keras_elmo.batch_to_ids([sentence])))
        expected.append(np.stack([np.asarray(x)[0] for x in layers], 1))
    expected = np.concatenate(expected)  # [10, L + 1, 2P]
    scale = float(np.abs(expected).max())
    for name in ("onnx", "litert_int8"):
        worker = script.Worker(
            name,
            [
                sys.executable,
                os.path.join(BENCHMARKS, "simple_elmo_worker.py"),
                "--mode",
                "portable",
                "--file",
                files[name]["path"],
                "--sentences",
                str(sentences_path),
                "--batch-size",
                "3",
            ],
            env=dict(os.environ, PYTHONPATH=REPO),
        )
        assert worker.ask("warm") == {"warm": True}
        timed = worker.ask("round")
        assert timed["tokens"] == 10 and timed["seconds"] > 0
        out = tmp_path / f"{name}.npy"
        worker.ask(f"outputs {out}")
        # A worker of numpy and one runtime: far below a TensorFlow one.
        assert worker.quit()["peak_rss_mb"] < 1000
        real = np.load(out)
        assert real.shape == expected.shape
        worst = float(np.abs(real - expected).max())
        if name == "onnx":
            assert worst <= 1e-5 * scale, worst / scale
        else:  # int8: tests/export/portable_test.py's tiny-model bound
            assert 1e-3 * scale < worst <= 0.11 * scale, worst / scale


def test_portable_summary_uses_both_bases():
    script = load_benchmark("simple_elmo_side_by_side")
    names = list(script.PORTABLE_WORKERS)
    speeds = [100.0, 200.0, 250.0, 300.0, 260.0, 330.0]
    rounds = [
        {n: {"tokens_per_s": v * k} for n, v in zip(names, speeds)}
        for k in (1.0, 2.0)
    ]
    _, ratios = script.summarise(rounds, names)
    assert ratios["portable/litert_int8 vs simple_elmo"] == {
        "ratio_of_medians": 3.3,
        "per_round_min": 3.3,
        "per_round_max": 3.3,
    }
    assert ratios["portable/onnx vs keras_elmo/stateless"][
        "ratio_of_medians"
    ] == pytest.approx(1.25)
    assert len(ratios) == 2 * 4  # each file against both bases
    _, tf_path = script.summarise(rounds, names[:2], bases=1)
    assert tf_path == {
        "keras_elmo/stateless vs simple_elmo": {
            "ratio_of_medians": 2.0,
            "per_round_min": 2.0,
            "per_round_max": 2.0,
        }
    }
