"""`keras_elmo.Embedder`: vectors per sentence, sentence vectors, files."""

import h5py
import numpy as np
import pytest

import keras_elmo

SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Hello"],
    [],
    "a sentence given as one string",
    ["naïve", "café", "déjà", "vu"],
]


@pytest.fixture(scope="module")
def tiny(reference_weights):
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    emb = keras_elmo.Embedder.from_preset((options, weights), batch_size=2)
    return bilm, emb


def alone(bilm, tokens):
    """NumPy re-derivation: `[L+1, n, 2P]` of one sentence run alone."""
    out = bilm(keras_elmo.batch_to_ids([tokens or ["x"]]))
    word = np.asarray(out["word_emb"])[0]
    layers = [np.concatenate([word, word], -1)]
    layers += [np.asarray(out[f"lstm_outputs{k}"])[0] for k in (1, 2)]
    return np.stack(layers)[:, : len(tokens)]


def tokens_of(sentence):
    return sentence.split() if isinstance(sentence, str) else sentence


def test_embed_all_layers_in_input_order(tiny):
    bilm, emb = tiny
    vectors = emb.embed(SENTENCES)
    assert len(vectors) == len(SENTENCES)
    for sentence, got in zip(SENTENCES, vectors):
        want = alone(bilm, tokens_of(sentence))
        assert got.dtype == np.float32
        assert got.shape == (3, len(tokens_of(sentence)), 32)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_top_and_average(tiny):
    bilm, emb = tiny
    all_layers = emb.embed(SENTENCES)
    for got, full in zip(emb.embed(SENTENCES, layers="top"), all_layers):
        np.testing.assert_array_equal(got, full[-1])
    for got, full in zip(emb.embed(SENTENCES, layers="average"), all_layers):
        np.testing.assert_allclose(got, full.mean(0), rtol=1e-6, atol=1e-7)


def test_vectors_do_not_depend_on_the_batch(tiny):
    _, emb = tiny
    together = emb.embed(SENTENCES)
    for sentence, got in zip(SENTENCES, together):
        np.testing.assert_allclose(
            emb.embed_sentence(sentence), got, rtol=1e-5, atol=1e-6
        )


def test_sentence_vectors_are_masked_means_and_zeros_when_empty(tiny):
    _, emb = tiny
    means = emb.sentence_vectors(SENTENCES)
    assert means.shape == (len(SENTENCES), 32)
    for b, vectors in enumerate(emb.embed(SENTENCES, layers="average")):
        want = vectors.mean(0) if len(vectors) else np.zeros(32)
        np.testing.assert_allclose(means[b], want, rtol=1e-6, atol=1e-7)
    assert not np.isnan(means).any()
    assert (means[2] == 0).all()
    per_layer = emb.sentence_vectors(SENTENCES, layers="all")
    assert per_layer.shape == (len(SENTENCES), 3, 32)
    unit = emb.sentence_vectors(SENTENCES, normalize=True)
    norms = np.linalg.norm(unit, axis=-1)
    np.testing.assert_allclose(norms[[0, 1, 3, 4]], 1.0, rtol=1e-6)
    assert norms[2] == 0


def test_embed_file_is_the_command_engine(tiny, tmp_path):

    _, emb = tiny
    src = tmp_path / "in.txt"
    src.write_text("a b c\n\nthe cat .\n", encoding="utf-8")
    ours = str(tmp_path / "ours.hdf5")
    assert emb.embed_file(str(src), ours, layers="top") == 3
    with h5py.File(ours, "r") as f:
        assert sorted(f) == ["0", "1", "2", "sentence_to_index"]
        np.testing.assert_allclose(
            f["2"][()], emb.embed([["the", "cat", "."]], "top")[0], atol=1e-6
        )
        assert f["1"].shape == (0, 32)
    with pytest.raises(FileExistsError, match="force=True"):
        emb.embed_file(str(src), ours)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        emb.embed_file(str(src), str(tmp_path), force=True)


def test_bad_input_names_the_argument(tiny):
    _, emb = tiny
    with pytest.raises(TypeError, match="`sentences`.*got str"):
        emb.embed("not a list")
    with pytest.raises(TypeError, match="str tokens, got a int in sentence 1"):
        emb.embed([["ok"], [3]])
    with pytest.raises(ValueError, match="`layers`.*got 'middle'"):
        emb.embed([["a"]], layers="middle")
    with pytest.raises(ValueError, match="`batch_size`.*got 0"):
        keras_elmo.Embedder.from_preset("elmo_small_en", batch_size=0)


def test_a_savedmodel_is_a_source(tiny, tmp_path):
    bilm, emb = tiny
    path = str(tmp_path / "saved")
    keras_elmo.export_saved_model(bilm, path)
    served = keras_elmo.Embedder.from_preset(path)
    assert served.description == f"SavedModel {path}"
    for got, want in zip(served.embed(SENTENCES), emb.embed(SENTENCES)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
