"""benchmarks/portable_int8.py: its CoNLL-U reading, its deviation and
cosine figures, and its softmax-regression probe (the export-heavy run
itself is the benchmark)."""

import argparse
import gzip

import numpy as np
import pytest

from tests.benchmarks.scripts import load_benchmark

bench = load_benchmark("portable_int8")


def test_read_conllu_skips_ranges_and_empty_nodes(tmp_path):
    rows = [
        "# text = I'm here",
        "1-2\tI'm\t_\t_\t_\t_\t_\t_\t_\t_",
        "1\tI\tI\tPRON\t_\t_\t_\t_\t_\t_",
        "2\t'm\tbe\tAUX\t_\t_\t_\t_\t_\t_",
        "2.1\tx\tx\tX\t_\t_\t_\t_\t_\t_",
        "3\there\there\tADV\t_\t_\t_\t_\t_\t_",
        "",
        "1\tYes\tyes\tINTJ\t_\t_\t_\t_\t_\t_",
        "",
        "1\tNo\tno\tINTJ\t_\t_\t_\t_\t_\t_",
        "",
    ]
    path = tmp_path / "x.conllu.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    assert bench.read_conllu(str(path), 2) == [
        (["I", "'m", "here"], ["PRON", "AUX", "ADV"]),
        (["Yes"], ["INTJ"]),
    ]


def test_deviation_is_max_abs_over_max_and_token_cosine():
    ref = {
        "elmo": np.array([[[3.0, 4.0], [0.0, 0.0]]], np.float32),
        "default": np.array([[1.5, 2.0]], np.float32),
        "sequence_len": np.array([1], np.int32),
    }
    out = {
        "elmo": np.array([[[4.0, 3.0], [0.0, 0.0]]], np.float32),
        "default": np.array([[2.0, 1.5]], np.float32),
        "sequence_len": np.array([1], np.int32),
    }
    d = bench.deviation([out], [ref])
    # max |diff| 1.0 over max |ref| 4.0; cos([4,3],[3,4]) = 24/25.
    assert d["max_abs_over_max_activation"] == 0.25
    assert d["max_activation"] == 4.0
    assert np.isclose(d["elmo_cosine_min"], 0.96)
    assert np.isclose(d["elmo_cosine_mean"], 0.96)


def test_probe_learns_separable_classes_and_is_deterministic():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 8)).astype(np.float32) * 3
    y = rng.integers(0, 4, 400)
    x = centres[y] + rng.normal(size=(400, 8)).astype(np.float32)
    w, b = bench.train_probe(x, y, 4, 1e-3, steps=100)
    assert w.shape == (8, 4) and b.shape == (4,)
    # A nearest-centre rule's accuracy on this data, which the probe
    # (a linear classifier it can represent) must match or beat.
    nearest = ((x[:, None] - centres[None]) ** 2).sum(-1).argmin(1)
    assert ((x @ w + b).argmax(1) == y).mean() >= (nearest == y).mean()
    w2, b2 = bench.train_probe(x, y, 4, 1e-3, steps=100)
    np.testing.assert_array_equal(w, w2)
    np.testing.assert_array_equal(b, b2)


def test_read_sentiment_uses_the_examples_reader(tmp_path):
    (tmp_path / "train.tsv").write_text(
        "1\t1.5\tA thoughtful, provocative film.\n"
        "0\t-2.0\tIt isn't good.\n"
        "1\t0.5\tYes!\n",
        encoding="utf-8",
    )
    every = bench.read_sentiment(str(tmp_path), "train")
    assert every == [
        (["A", "thoughtful", ",", "provocative", "film", "."], 1),
        (["It", "is", "n't", "good", "."], 0),
        (["Yes", "!"], 1),
    ]
    # A fixed draw, in file order: the same two each time.
    drawn = bench.read_sentiment(str(tmp_path), "train", 2)
    assert len(drawn) == 2 and drawn == [r for r in every if r in drawn]
    assert bench.read_sentiment(str(tmp_path), "train", 2) == drawn
    assert bench.read_sentiment(str(tmp_path), "train", 5) == every
    with pytest.raises(FileNotFoundError, match="fetch_paper_data.py"):
        bench.read_sentiment(str(tmp_path), "test")


def test_seeded_probe_draws_the_same_units_for_every_file():
    rng = np.random.default_rng(1)
    y_units = [np.array([i % 2]) for i in range(60)]
    x = np.stack([[3.0 * y[0] - 1.5, 0.0] for y in y_units]).astype(np.float32)
    x += rng.normal(size=x.shape).astype(np.float32) * 0.1
    rows = [x[i : i + 1] for i in range(60)]
    y_test = np.array([0, 1], np.int64)
    x_test = np.array([[-1.5, 0.0], [1.5, 0.0]], np.float32)
    args = argparse.Namespace(seeds=3, l2=1e-3)
    per_unit = {
        name: (rows, x_test)
        for name in ("onnx", "onnx_int8", "litert", "litert_int8")
    }
    accuracy = bench.seeded_probe(per_unit, y_units, y_test, 2, args, 20)
    # The same features and the same draws: the same accuracies.
    assert accuracy == {name: [1.0, 1.0, 1.0] for name in per_unit}
    summary = bench.noise_summary(
        {"onnx": [0.5, 0.7], "litert": [0.6, 0.6], "onnx_int8": [0.55, 0.7],
         "litert_int8": [0.6, 0.5]}
    )  # fmt: skip
    assert summary["float_seed_spread"] == pytest.approx(0.2)
    assert summary["int8_minus_float_per_seed"] == {
        "onnx_int8": [0.05, 0.0],
        "litert_int8": [0.0, -0.1],
    }
