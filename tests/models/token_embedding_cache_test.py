"""Token-embedding cache: same outputs as the uncached biLM, saved with it."""

# The cache runs the char-CNN on unique tokens in batches of their own, so
# float rounding differs from the uncached run by CPU (1.3e-6 seen on an
# AVX2-only EPYC, under 1e-6 on AVX-512): a relative bound on AVX2-only
# CPUs (tests/cpu_rounding.py).

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache
from keras_elmo.models.token_embedding_cache import load_vocabulary
from tests.conftest import padded
from tests.conftest import tiny_bilm
from tests.cpu_rounding import on_cpu

SEED = 5  # the seed these tests were checked with

VOCABULARY = ["<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "mat", "a"]
# In-vocabulary and unknown tokens mixed, lengths 1..6, a repeated unknown
# token, the literal "<S>", a token over 48 bytes and non-ASCII text.
SENTENCES = [
    "the cat sat on the mat".split(),
    ["dogs"],
    ["a", "Zürich", "cat"],
    ["<S>", "x" * 60, "the", "zebra", "zebra"],
    ["mat", "mat"],
]


@pytest.fixture
def reference_bilm(reference_weights):
    """The AllenNLP harness's `tiny` weights: activations of order 1 that
    reach both clip values, so a 1e-6 bound means something."""
    return keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))


def test_cache_rows_are_the_char_cnn_of_each_token():
    bilm = tiny_bilm(SEED)
    cache = TokenEmbeddingCache(VOCABULARY, bilm)
    cache.build()
    table = np.asarray(cache.embeddings)
    assert table.shape == (3 + len(VOCABULARY), 16)
    ids = keras_elmo.batch_to_ids([VOCABULARY])  # [1, V, 50]
    np.testing.assert_allclose(
        table[3:], np.asarray(bilm.embed_tokens(ids))[0], atol=1e-6
    )
    with_boundaries = keras_elmo.layers.AddSentenceBoundaries()(
        keras_elmo.batch_to_ids([["a"], []])
    )  # row 1 is empty: <S>, </S>, padding
    x = np.asarray(bilm.embed_tokens(with_boundaries))
    np.testing.assert_allclose(table[1], x[0, 0], atol=1e-6)  # <S>
    np.testing.assert_allclose(table[2], x[0, 2], atol=1e-6)  # </S>
    np.testing.assert_allclose(table[0], x[1, 2], atol=1e-6)  # padding
    assert not cache.trainable_weights


def test_cached_token_embeddings_equal_the_biLM_path(reference_bilm):
    bilm = reference_bilm
    cache = TokenEmbeddingCache(VOCABULARY, bilm)
    tokens = padded(SENTENCES)
    char_ids = keras_elmo.layers.CharacterIds()(tokens)
    boundaries = keras_elmo.layers.AddSentenceBoundaries()(char_ids)
    expected = np.asarray(bilm.embed_tokens(boundaries))
    got = np.asarray(cache(tokens))
    assert got.shape == expected.shape == (5, 8, 16)
    np.testing.assert_allclose(got, expected, atol=1e-6)


@pytest.mark.parametrize("compiled", [False, True])
def test_elmo_layer_with_cache_equals_uncached(compiled, reference_bilm):
    bilm = reference_bilm
    s = [0.3, -0.4, 0.9]
    plain = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, scalar_mix_parameters=s
    )
    cached = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, scalar_mix_parameters=s, vocabulary=VOCABULARY
    )
    tokens = padded(SENTENCES)
    run = tf.function(cached) if compiled else cached
    expected, got = np.asarray(plain(tokens)), np.asarray(run(tokens))
    assert np.abs(expected).max() > 1.0  # not trivially zero
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=on_cpu(0, 1e-5))
    np.testing.assert_array_equal(got[1, 1:], 0.0)  # padding
    np.testing.assert_array_equal(
        cached.compute_mask(tokens), np.asarray(tokens) != b""
    )
    # Every biLM layer, not just the mix.
    cached_out = bilm.contextualize(
        cached.token_cache(tokens), tokens != "", training=False
    )
    plain_out = bilm(keras_elmo.layers.CharacterIds()(tokens))
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        np.testing.assert_allclose(
            cached_out[key], plain_out[key], atol=1e-6, rtol=on_cpu(0, 1e-5)
        )


def test_all_unknown_and_all_known_batches(reference_bilm):
    bilm = reference_bilm
    plain = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)
    cached = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, vocabulary=VOCABULARY
    )
    for sentences in ([["dogs", "bark"], ["zebra"]], [["the", "cat"]]):
        tokens = padded(sentences)
        np.testing.assert_allclose(
            cached(tokens), plain(tokens), atol=1e-6, rtol=on_cpu(0, 1e-5)
        )


def test_saves_and_loads_with_safe_mode(tmp_path):
    bilm = tiny_bilm(SEED)
    tokens = keras.Input(shape=(None,), dtype="string")
    layer = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, vocabulary=VOCABULARY
    )
    model = keras.Model(tokens, layer(tokens))
    x = padded(SENTENCES)
    expected = np.asarray(model(x))
    path = tmp_path / "cached.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    loaded_layer = loaded.layers[-1]
    assert loaded_layer.vocabulary == VOCABULARY
    np.testing.assert_array_equal(
        loaded_layer.token_cache.embeddings, layer.token_cache.embeddings
    )
    np.testing.assert_array_equal(loaded(x), expected)


def test_refresh_follows_new_biLM_weights(reference_bilm):
    bilm = reference_bilm
    layer = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, vocabulary=VOCABULARY
    )
    x = padded(SENTENCES)
    layer(x)
    kernel = bilm.token_projection.kernel
    kernel.assign(kernel * 2.0)
    plain = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)
    stale = np.abs(np.asarray(layer(x)) - np.asarray(plain(x))).max()
    assert stale > 1e-3
    layer.refresh_token_cache()
    np.testing.assert_allclose(
        layer(x), plain(x), atol=1e-6, rtol=on_cpu(0, 1e-5)
    )


def test_vocabulary_file_and_bad_vocabularies(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCABULARY + ["the2"]) + "\n", encoding="utf-8")
    assert load_vocabulary(str(path)) == VOCABULARY + ["the2"]
    assert load_vocabulary(["a", "", "b", "a"]) == ["a", "b"]
    with pytest.raises(ValueError, match="`vocabulary`.*at least one"):
        load_vocabulary([""])
    with pytest.raises(TypeError, match="`vocabulary`.*got 3"):
        load_vocabulary(["a", 3])
    with pytest.raises(TypeError, match="`vocabulary`.*list of str"):
        load_vocabulary(12)
    with pytest.raises(ValueError, match="`trainable_bilm=True`"):
        keras_elmo.layers.ElmoLayer(
            tiny_bilm(SEED), vocabulary=VOCABULARY, trainable_bilm=True
        )
    layer = keras_elmo.layers.ElmoLayer(tiny_bilm(SEED))
    with pytest.raises(ValueError, match="no token cache"):
        layer.refresh_token_cache()
