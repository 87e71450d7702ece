"""`BiLMEmbedder(vocabulary=...)` and `keras-elmo embed --vocab`: the token
cache gives the uncached vectors."""

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.embedding.embedder import BiLMEmbedder
from tests.cpu_rounding import on_cpu

VOCABULARY = ["<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", ".", "a"]
LINES = [
    "The cat sat on the mat .",
    "a",
    "",
    "naïve café , déjà vu on the cat",
    "a b c d e f g h i j k",
]


@pytest.fixture(scope="module")
def reference(reference_weights):
    options, weights = reference_weights("tiny")
    return options, weights, keras_elmo.BiLM.from_allennlp(options, weights)


def as_bytes(lines):
    return [[t.encode("utf-8") for t in line.split()] for line in lines]


def test_cached_embedder_equals_uncached(reference):
    bilm = reference[2]
    plain = BiLMEmbedder(bilm)(as_bytes(LINES))
    cached_embedder = BiLMEmbedder(bilm, vocabulary=VOCABULARY)
    cached = cached_embedder(as_bytes(LINES))
    assert cached_embedder.token_cache.vocabulary == VOCABULARY
    assert [c.shape for c in cached] == [p.shape for p in plain]
    assert cached[0].shape == (3, 7, 32)
    for want, got in zip(plain, cached):
        # Float rounding differs by CPU (tests/cpu_rounding.py): 1.3e-6
        # seen on an AVX2-only EPYC, so a relative bound there.
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=on_cpu(0, 1e-5))


@pytest.mark.large
def test_embed_cli_with_vocab(reference, tmp_path, capsys):
    options, weights, bilm = reference
    src = tmp_path / "in.txt"
    src.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    outputs = {}
    for name, extra in (("plain", []), ("cached", ["--vocab", str(vocab)])):
        dst = str(tmp_path / f"{name}.hdf5")
        argv = ["embed", str(src), dst, "--options", options]
        argv += ["--weights", weights, "--batch-size", "2", *extra]
        assert main(argv) == 0
        with h5py.File(dst, "r") as f:
            outputs[name] = [f[str(i)][()] for i in range(len(LINES))]
    assert "token cache of" in capsys.readouterr().err
    for want, got in zip(outputs["plain"], outputs["cached"]):
        assert got.shape == want.shape
        # Float rounding differs by CPU (tests/cpu_rounding.py): 1.3e-6
        # seen on an AVX2-only EPYC, so a relative bound there.
        np.testing.assert_allclose(got, want, atol=1e-6, rtol=on_cpu(0, 1e-5))


def test_vocab_with_a_saved_model_is_refused(bilm_export, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("a b\n", encoding="utf-8")
    argv = ["embed", str(src), str(tmp_path / "out.hdf5")]
    argv += ["--model", bilm_export[1], "--vocab", "vocab.txt"]
    assert main(argv) != 0
    assert "`--vocab` caches token embeddings" in capsys.readouterr().err
    assert not (tmp_path / "out.hdf5").exists()
