"""The CoVe example: BLEU, the fixed split, the MT-LSTM's masking and
decoder, and a resumable training run on synthetic verse pairs."""

import json
import math
import os

import keras
import numpy as np
import pytest

from tests.paper_tables_test import example
from tests.paper_tables_test import examples_on_path  # noqa: F401 (autouse)
from tests.paper_tables_test import write_fixtures


def test_corpus_bleu_matches_the_formula():
    bleu = example("train_cove").corpus_bleu
    hyp, ref = "the cat sat on the mat".split(), "the cat sat on a mat".split()
    # Clipped n-gram precisions 5/6, 3/5, 2/4, 1/3; equal lengths: BP 1.
    expected = (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert bleu([hyp], [ref]) == pytest.approx(expected, rel=1e-12)
    # Short hypothesis: p1 = p2 = 1, BP = exp(1 - 3 / 2).
    short = bleu([["the", "cat"]], [["the", "cat", "sat"]], max_n=2)
    assert short == pytest.approx(math.exp(-0.5), rel=1e-12)
    assert bleu([["x"]], [["y"]]) == 0.0
    assert bleu([ref], [ref]) == pytest.approx(1.0)


def test_split_is_fixed_and_disjoint():
    split = example("train_cove").split_pairs
    train, dev, test = split(1000)
    assert (len(train), len(dev), len(test)) == (970, 10, 20)
    assert len(set(train) | set(dev) | set(test)) == 1000
    for a, b in zip((train, dev, test), split(1000)):
        np.testing.assert_array_equal(a, b)


def test_translator_ignores_source_padding_and_decoder_agrees():
    cove_model = example("cove_model")
    keras.utils.set_random_seed(0)
    glove = np.random.default_rng(0).normal(size=(10, 50)).astype("float32")
    glove[:2] = 0.0
    encoder = cove_model.build_encoder(50, 8)
    translator, decoder = cove_model.build_translator(glove, encoder, 12, dim=8)
    previous = np.array([[2, 5, 6]], np.int32)
    words = np.array([[2, 3, 4]], np.int32)
    padded = np.array([[2, 3, 4, 0, 0]], np.int32)
    plain = np.asarray(translator({"words": words, "previous": previous}))
    np.testing.assert_allclose(
        np.asarray(translator({"words": padded, "previous": previous})),
        plain,
        atol=1e-6,
    )
    top = encoder({"vectors": glove[words], "mask": np.ones((1, 3), bool)})[1]
    top = keras.ops.array(np.asarray(top))  # no Keras mask attached
    np.testing.assert_allclose(
        np.asarray(
            decoder({"top": top, "previous": keras.ops.array(previous)})
        ),
        plain,
        atol=1e-6,
    )


@pytest.mark.large
def test_train_cove_runs_resumes_and_exports(tmp_path):
    train_cove = example("train_cove")
    root = write_fixtures(tmp_path)
    (root / "bible").mkdir()
    english = ["the dog runs .", "a cat sleeps .", "the man runs ."]
    spanish = ["el perro corre .", "un gato duerme .", "el hombre corre ."]
    with open(root / "bible" / "kjv_rv1909.tsv", "w") as f:
        for n in range(100):
            f.write(f"Gen.1.{n + 1}\t{english[n % 3]}\t{spanish[n % 3]}\n")
    common = [
        "--data-dir", str(root), "--run-dir", str(tmp_path / "run"),
        "--hidden", "8", "--batch-size", "8", "--checkpoint-every", "2",
        "--quiet",
    ]  # fmt: skip
    first = train_cove.main(common + ["--steps", "2"])
    assert first["steps"] == 2
    results = tmp_path / "cove.json"
    second = train_cove.main(
        common + ["--steps", "4", "--results", str(results)]
    )
    assert second["steps"] == 4
    checkpoints = sorted(os.listdir(tmp_path / "run" / "checkpoints"))
    assert "ckpt-4.index" in checkpoints
    stored = json.loads(results.read_text())
    assert stored["pairs"] == {"train": 97, "dev": 1, "test": 2}
    assert stored["test_perplexity"] > 1.0
    assert 0.0 <= stored["test_bleu"] <= 1.0
    assert stored["provenance"]["commit"] is not None
    encoder = keras.saving.load_model(
        tmp_path / "run" / "cove_encoder.keras", safe_mode=True
    )
    outputs = encoder(
        {
            "vectors": np.ones((1, 3, 50), "float32"),
            "mask": np.ones((1, 3), bool),
        }
    )
    assert [tuple(o.shape) for o in outputs] == [(1, 3, 16), (1, 3, 16)]


@pytest.mark.large
def test_cove_layer_probe_smoke(tmp_path, capsys):
    root = write_fixtures(tmp_path)
    keras.utils.set_random_seed(0)
    path = tmp_path / "cove_encoder.keras"
    example("cove_model").build_encoder(50, 32).save(path)
    out = tmp_path / "table6_cove.json"
    results = example("cove_layer_probe").main(
        [
            "--encoder", str(path), "--data-dir", str(root / "ud"),
            "--glove-dir", str(root / "glove"), "--model", "tiny",
            "--epochs", "1", "--cache-dir", str(tmp_path / "cache"),
            "--out", str(out), "--seeds", "2",
        ]
    )  # fmt: skip
    stored = json.loads(out.read_text())
    assert list(stored["cove"]) == ["GloVe", "biLSTM 1", "biLSTM 2 (CoVe)"]
    assert list(stored["bilm"]) == ["token layer", "biLSTM 1", "biLSTM 2"]
    assert stored["seeds"] == [0, 1]
    for kind in ("cove", "bilm"):
        for scores in stored[kind].values():
            assert 0.0 <= scores["test"] <= 1.0
            runs = scores["runs"]
            assert [run["seed"] for run in runs] == [0, 1]
            tests = [run["test"] for run in runs]
            assert scores["test"] == pytest.approx(np.mean(tests))
            assert scores["test_std"] == pytest.approx(np.std(tests, ddof=1))
    assert results["provenance"]["commit"] is not None


def test_cove_layers_are_glove_then_the_encoder_states():
    keras.utils.set_random_seed(0)
    encoder = example("cove_model").build_encoder(50, 32)
    vectors = np.random.default_rng(1).normal(size=(2, 50)).astype("float32")
    sentences = [["Dog", "zzz", "cat"], ["cat"]]
    layers = example("cove_layer_probe").cove_layers(
        encoder, (["dog", "cat"], vectors), sentences
    )
    assert layers.shape == (4, 3, 64) and layers.dtype == np.float16
    expected0 = np.zeros((4, 64), np.float32)
    expected0[0, :50], expected0[2, :50], expected0[3, :50] = (
        vectors[0], vectors[1], vectors[1]
    )  # fmt: skip
    np.testing.assert_allclose(layers[:, 0], expected0, atol=2e-3)
    inputs = expected0[:3, :50][None]
    h1, h2 = encoder({"vectors": inputs, "mask": np.ones((1, 3), bool)})
    np.testing.assert_allclose(layers[:3, 1], np.asarray(h1)[0], atol=2e-3)
    np.testing.assert_allclose(layers[:3, 2], np.asarray(h2)[0], atol=2e-3)
