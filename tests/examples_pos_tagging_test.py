"""Smoke-runs the POS-tagging examples (paper Fig. 1) with tiny
settings: CoNLL-U reading and encoding, the biLM layer cache, the
tagger, its summary and plots, and the layer probe.
"""

import gzip
import json
import math
import os

import numpy as np
import pytest

from tests.conftest import load_example

pytestmark = pytest.mark.usefixtures("examples_on_path")


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_valid_png(path):
    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE
    assert os.path.getsize(path) < 100_000
    from matplotlib import image

    pixels = image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100


# A tiny UD-like treebank: words with their UPOS tags.
SENTENCES = [
    [("The", "DET"), ("dog", "NOUN"), ("runs", "VERB"), (".", "PUNCT")],
    [("A", "DET"), ("cat", "NOUN"), ("sleeps", "VERB"), (".", "PUNCT")],
    [("She", "PRON"), ("reads", "VERB"), ("books", "NOUN"), (".", "PUNCT")],
    [("Big", "ADJ"), ("dogs", "NOUN"), ("bark", "VERB"), ("!", "PUNCT")],
    [("He", "PRON"), ("can", "AUX"), ("swim", "VERB"), ("fast", "ADV")],
]


def conllu_text(sentences, multiword=False):
    lines = []
    for n, sentence in enumerate(sentences):
        lines.append(f"# sent_id = s{n}")
        if multiword:
            lines.append("1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_")
        for i, (word, tag) in enumerate(sentence, start=1):
            lines.append(
                f"{i}\t{word}\t{word.lower()}\t{tag}\t_\t_\t0\tdep\t_\t_"
            )
        if multiword:
            lines.append("4.1\tgone\t_\t_\t_\t_\t_\t_\t_\t_")
        lines.append("")
    return "\n".join(lines) + "\n"


@pytest.fixture
def treebank(tmp_path):
    """A data dir with en_ewt-ud-1.2-{train,dev,test}.conllu.gz files."""
    sizes = {"train": 10, "dev": 4, "test": 5}
    for split, size in sizes.items():
        chosen = [SENTENCES[i % len(SENTENCES)] for i in range(size)]
        path = tmp_path / f"en_ewt-ud-1.2-{split}.conllu.gz"
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(conllu_text(chosen))
    return str(tmp_path)


def test_read_conllu_skips_multiword_ranges_and_empty_nodes(tmp_path):
    pos_data = load_example("pos_data")
    path = tmp_path / "x.conllu"
    path.write_text(conllu_text(SENTENCES[:2], multiword=True))
    sentences = pos_data.read_conllu(str(path))
    assert sentences == [
        (["The", "dog", "runs", "."], ["DET", "NOUN", "VERB", "PUNCT"]),
        (["A", "cat", "sleeps", "."], ["DET", "NOUN", "VERB", "PUNCT"]),
    ]
    assert len(pos_data.read_conllu(str(path), max_sentences=1)) == 1


def test_read_conllu_names_the_bad_line(tmp_path):
    pos_data = load_example("pos_data")
    path = tmp_path / "bad.conllu"
    path.write_text("# c\n1\tword\tNOUN\n")
    with pytest.raises(ValueError, match=r"bad.conllu:2: expected 10"):
        pos_data.read_conllu(str(path))


def test_vocabularies_and_encoding():
    pos_data = load_example("pos_data")
    sentences = [
        (words, tags)
        for words, tags in (zip(*s) for s in SENTENCES[:2] + SENTENCES[:1])
    ]
    words, chars, tags = pos_data.build_vocabularies(sentences)
    # "the" (seen twice) is kept; "cat" (once) is not: min count 2.
    assert words.id("the") >= 2 and words.id("cat") == pos_data.UNK_ID
    assert len(tags) == 1 + len(pos_data.UPOS_TAGS)
    (word_ids, char_ids, tag_ids), *_ = pos_data.encode(
        sentences, (words, chars, tags), max_word_chars=3
    )
    assert word_ids.tolist() == [words.id("the"), words.id("dog")] + [
        words.id("runs"),
        words.id("."),
    ]
    assert char_ids.shape == (4, 3)
    assert char_ids[3].tolist() == [chars.id("."), 0, 0]
    assert tag_ids.tolist() == [tags.id(t) for t in sentences[0][1]]


def test_subsample():
    pos_data = load_example("pos_data")
    index = pos_data.subsample(200, 0.1, seed=3)
    assert len(index) == 20 and len(set(index)) == 20
    assert np.all(np.diff(index) > 0)
    assert np.array_equal(index, pos_data.subsample(200, 0.1, seed=3))
    assert len(pos_data.subsample(50, 0.001, seed=0)) == 1
    with pytest.raises(ValueError, match="`fraction`.*got 1.5"):
        pos_data.subsample(10, 1.5, seed=0)


@pytest.mark.large
def test_cached_layers_mixed_equal_the_elmo_layer(tmp_path):
    import keras

    import keras_elmo

    bilm_cache = load_example("bilm_cache")
    bilm = bilm_cache.load_bilm("tiny", seed=1)
    sentences = [["The", "dog", "runs", "."], ["Big", "dogs"], ["x"]]
    data = tmp_path / "data.txt"
    data.write_text("stands in for the data file\n")
    cache = str(tmp_path / "cache")
    layers = bilm_cache.cached_layers(
        bilm, "tiny", str(data), sentences, cache_dir=cache
    )
    assert [a.shape for a in layers] == [(4, 3, 32), (2, 3, 32), (1, 3, 32)]
    assert all(a.dtype == np.float16 for a in layers)
    (name,) = os.listdir(cache)
    assert name.startswith(f"tiny-{bilm_cache.weights_digest(bilm)}-data-")
    # A second call reads the cache: the same float16 values.
    again = bilm_cache.cached_layers(
        bilm, "tiny", str(data), sentences, cache_dir=cache
    )
    for a, b in zip(layers, again):
        np.testing.assert_array_equal(a, b)
    # Other weights, another cache file.
    other = bilm_cache.load_bilm("tiny", seed=2)
    bilm_cache.cached_layers(other, "tiny", str(data), sentences, cache)
    assert len(os.listdir(cache)) == 2

    # ScalarMix over the cached layers == ElmoLayer with the frozen biLM.
    elmo = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)
    expected = np.asarray(elmo(keras_elmo.batch_to_ids(sentences)))
    s = np.array([0.3, -0.2, 0.5], np.float32)
    elmo.scalar_mixes[0].scalar_parameters.assign(s)
    elmo.scalar_mixes[0].gamma.assign(1.7)
    expected = np.asarray(elmo(keras_elmo.batch_to_ids(sentences)))
    mix = keras_elmo.layers.ScalarMix(3, initial_scalar_parameters=s.tolist())
    mix.build([(None, 3, None, 32)])
    mix.gamma.assign(1.7)
    for row, activations in enumerate(layers):
        stacked = np.transpose(activations, (1, 0, 2))[None].astype("float32")
        mixed = np.asarray(mix(keras.ops.convert_to_tensor(stacked)))[0]
        n = len(sentences[row])
        np.testing.assert_allclose(mixed, expected[row, :n], atol=2e-3)
        assert np.all(expected[row, n:] == 0.0)


def test_summarize_error_reduction():
    pos_tagging = load_example("pos_tagging")
    runs = [
        {
            "baseline": {"test": b},
            "elmo": {"test": e, "mix_weights": w},
        }
        for b, e, w in [
            (0.90, 0.95, [0.2, 0.5, 0.3]),
            (0.80, 0.85, [0.4, 0.3, 0.3]),
        ]
    ]
    summary = pos_tagging.summarize(runs)
    assert summary["baseline"]["mean"] == pytest.approx(0.85)
    assert summary["baseline"]["std"] == pytest.approx(math.sqrt(0.005))
    assert summary["elmo"]["mean"] == pytest.approx(0.90)
    # Errors 0.15 -> 0.10: a third of the baseline's errors removed.
    assert summary["relative_error_reduction"] == pytest.approx(1 / 3)
    assert summary["mix_weights_mean"] == pytest.approx([0.3, 0.4, 0.3])
    assert summary["mix_weights_std"] == pytest.approx([0.1, 0.1, 0.0])


@pytest.mark.large
def test_pos_tagging_smoke(treebank, tmp_path, capsys):
    pos_tagging = load_example("pos_tagging")
    figures = tmp_path / "figures"
    out_json = tmp_path / "results.json"
    results = pos_tagging.main(
        [
            "--data-dir", treebank,
            "--model", "tiny",
            "--seeds", "1",
            "--fractions", "1.0",
            "--min-steps", "2",
            "--epochs", "1",
            "--evaluations", "1",
            "--batch-size", "4",
            "--hidden", "8",
            "--cache-dir", str(tmp_path / "cache"),
            "--plot",
            "--figures-dir", str(figures),
            "--out-json", str(out_json),
            "--quiet",
        ]
    )  # fmt: skip
    (run,) = results["fractions"]["1.0"]["runs"]
    assert run["sentences"] == 10 and run["steps"] == 3  # 1 epoch of 3
    for kind in ("baseline", "elmo"):
        assert 0.0 <= run[kind]["test"] <= 1.0
        assert 0.0 <= run[kind]["dev"] <= 1.0
    weights = run["elmo"]["mix_weights"]
    assert len(weights) == 3 and sum(weights) == pytest.approx(1.0)
    assert json.loads(out_json.read_text())["fractions"]["1.0"]["runs"] == [
        json.loads(json.dumps(run))
    ]
    assert sorted(os.listdir(figures)) == ["scalar_mix_weights.png"]
    assert_valid_png(figures / "scalar_mix_weights.png")
    assert "UPOS test accuracy" in capsys.readouterr().out


def test_sample_efficiency_plot(tmp_path):
    plots = load_example("plots")
    summary = {
        "baseline": {"mean": 0.8, "std": 0.01},
        "elmo": {"mean": 0.85, "std": 0.02},
        "mix_weights_mean": [0.2, 0.5, 0.3],
        "mix_weights_std": [0.01, 0.02, 0.0],
    }
    results = {
        "model": "tiny",
        "fractions": {f: {"summary": summary} for f in ("0.01", "0.1", "1.0")},
    }
    path = tmp_path / "sub" / "sample_efficiency.png"
    assert plots.sample_efficiency(results, str(path)) == str(path)
    assert_valid_png(path)
    # The script form redraws both from pos_tagging.py's JSON.
    (tmp_path / "results.json").write_text(json.dumps(results))
    paths = plots.main(
        [str(tmp_path / "results.json"), "--figures-dir", str(tmp_path)]
    )
    assert [os.path.basename(p) for p in paths] == [
        "scalar_mix_weights.png",
        "sample_efficiency.png",
    ]
    for path in paths:
        assert_valid_png(path)


@pytest.mark.large
def test_layer_probe_smoke(treebank, tmp_path, capsys):
    out_json = tmp_path / "probe.json"
    results = load_example("layer_probe").main(
        [
            "--data-dir", treebank,
            "--model", "tiny",
            "--epochs", "1",
            "--cache-dir", str(tmp_path / "cache"),
            "--out-json", str(out_json),
        ]
    )  # fmt: skip
    assert sorted(results["layers"]) == ["0", "1", "2"]
    devs = {int(j): r["dev"] for j, r in results["layers"].items()}
    assert all(0.0 <= r["test"] <= 1.0 for r in results["layers"].values())
    # The layer is chosen on dev, never on test.
    assert results["best_layer_on_dev"] == max(devs, key=devs.get)
    assert "best layer on dev" in capsys.readouterr().out
    written = json.loads(out_json.read_text())
    assert written["layers"] == results["layers"]
    assert written["provenance"]["command"]
