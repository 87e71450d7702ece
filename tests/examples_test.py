"""Smoke-runs the example scripts that illustrate the API (embedding,
conversion, training, export and serving, ELMoForManyLangs, lexical
substitutes) with tiny settings.
"""

import math
import os

import numpy as np
import pytest

from tests.conftest import load_example

pytestmark = pytest.mark.usefixtures("examples_on_path")


def test_embed_sentences(capsys):
    vectors = load_example("embed_sentences").main(
        ["--sentence", "a b c", "--sentence", "d"]
    )
    assert vectors.shape == (2, 3, 32)
    assert np.all(vectors[1, 1:] == 0.0)
    assert "a b c" in capsys.readouterr().out


@pytest.mark.large
def test_convert_allennlp_weights(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    diff = load_example("convert_allennlp_weights").main(
        ["--options", options, "--weights", weights, "--out-dir", str(tmp_path)]
    )
    assert diff == 0.0
    assert sorted(os.listdir(tmp_path)) == [
        "bilm.keras",
        "options.json",
        "weights.hdf5",
    ]


@pytest.mark.large
def test_train_tiny_bilm(tmp_path, capsys):
    valid = tmp_path / "valid.txt"
    lines = ["the king said unto them", "and it was so", "moby dick"]
    valid.write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    result = load_example("train_tiny_bilm").main(
        [
            "--valid", str(valid),
            "--out", str(out),
            "--epochs", "1",
            "--steps-per-epoch", "2",
        ]
    )  # fmt: skip
    # Each direction predicts every word and one boundary per sentence.
    assert result["tokens"] == sum(len(s.split()) + 1 for s in lines)
    forward, backward = (
        result["forward_perplexity"],
        result["backward_perplexity"],
    )
    assert 1.0 < forward < 1e6 and 1.0 < backward < 1e6
    assert result["perplexity"] == pytest.approx(math.sqrt(forward * backward))
    assert result["unigram_perplexity"] > 1.0
    for name in ("options.json", "weights.hdf5", "softmax.hdf5", "vocab.txt"):
        assert (out / name).exists(), name
    assert "valid perplexity" in capsys.readouterr().out


@pytest.mark.large
def test_export_and_serve(tmp_path, capsys):
    sentences = ["a b c", "d e"]
    result = load_example("export_and_serve").main(
        [
            "--model", "tiny",
            "--out", str(tmp_path / "elmo" / "1"),
            "--sentence", sentences[0],
            "--sentence", sentences[1],
        ]
    )  # fmt: skip
    for signature in ("default", "tokens"):
        outputs = result[signature]
        assert outputs["word_emb"].shape == (2, 3, 16)
        assert outputs["lstm_outputs1"].shape == (2, 3, 32)
        assert outputs["elmo"].shape == (2, 3, 32)
        assert outputs["default"].shape == (2, 32)
        assert outputs["sequence_len"].tolist() == [3, 2]
        assert result["max_abs_difference"][signature] <= 1e-4
    np.testing.assert_allclose(
        result["default"]["elmo"], result["tokens"]["elmo"], atol=1e-6
    )
    assert "equal the Keras model" in capsys.readouterr().out


def test_chinese_elmo_on_the_tiny_elmoformanylangs_fixture(capsys):
    from tests import efml_reference as ref

    sentences, expected, _ = ref.reference("word")
    args = ["--model", ref.folder("word", "legacy")]
    for sentence in sentences[:2]:
        args += ["--sentence", " ".join(sentence)]
    layers = load_example("chinese_elmo").main(args)
    for actual, e in zip(layers, expected[:2]):
        ref.assert_relative(actual, e)
    out = capsys.readouterr().out
    assert "我们 是 中国 人 。" in out and "cos('" not in out
    load_example("chinese_elmo").main(
        [
            "--model",
            ref.folder("char"),
            "--sentence",
            "我们 是",
            "--sentence",
            "是 我们",
        ]
    )
    assert "cos('我们' in 1, '我们' in 2) = " in capsys.readouterr().out


def test_lexical_substitutes(capsys):
    results = load_example("lexical_substitutes").main(
        ["--top-k", "2", "--sentence", "The river bank ."]
    )
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "The river bank ."
    assert [t["word"] for t in results[0]] == ["The", "river", "bank", "."]
    for token in results[0]:
        for direction in ("forward", "backward"):
            logp = token[direction]["logp"]
            assert len(logp) == 2 and logp[0] >= logp[1]
            assert all(-30.0 < p < 0.0 for p in logp)
            assert not {"<S>", "</S>"} & set(
                token[direction]["candidate_words"]
            )
