"""bf16 inference: `dtype="mixed_bfloat16"` stays close to float32, the mix
sums in float32, and the token cache changes nothing."""

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from tests.conftest import padded

SENTENCES = [
    "the cat sat on the mat".split(),
    ["dogs"],
    ["a", "Zürich", "cat"],
    ["x" * 60, "the", "zebra", "zebra"],
]
VOCABULARY = ["the", "cat", "sat", "on", "mat", "a"]
S = [0.3, -0.4, 0.9]


def as_float32(x):
    return np.asarray(tf.cast(x, tf.float32))


@pytest.fixture(scope="module")
def bilms(reference_weights):
    files = reference_weights("tiny")
    return (
        keras_elmo.BiLM.from_allennlp(*files),
        keras_elmo.BiLM.from_allennlp(*files, dtype="mixed_bfloat16"),
    )


def elmo(bilm, **kwargs):
    return keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, scalar_mix_parameters=S, **kwargs
    )


def test_bf16_elmo_layer_is_close_to_float32(bilms):
    full, low = bilms
    tokens = padded(SENTENCES)
    expected = as_float32(elmo(full)(tokens))
    out = elmo(low, dtype="mixed_bfloat16")(tokens)
    assert out.dtype == "bfloat16"
    deviation = np.abs(as_float32(out) - expected).max()
    # bfloat16 keeps 8 significant bits (relative step 2^-8 = 0.4%) and
    # the activations reach ~2.2: a few steps of rounding, not more.
    assert np.abs(expected).max() > 2.0
    assert 1e-4 < deviation < 0.05
    np.testing.assert_array_equal(as_float32(out)[1, 1:], 0.0)
    assert low.bilstm.kernels[0].dtype == "float32"


def test_bf16_token_cache_equals_bf16_uncached(bilms):
    low = bilms[1]
    tokens = padded(SENTENCES)
    plain = elmo(low, dtype="mixed_bfloat16")(tokens)
    cached = elmo(low, dtype="mixed_bfloat16", vocabulary=VOCABULARY)
    out = cached(tokens)
    assert cached.token_cache.embeddings.dtype == "float32"
    np.testing.assert_array_equal(as_float32(out), as_float32(plain))


def test_scalar_mix_sums_in_float32_and_rounds_once():
    rng = np.random.default_rng(0)
    layers = [
        tf.cast(rng.normal(size=(2, 5, 64)).astype("float32"), tf.bfloat16)
        for _ in range(3)
    ]
    mix = keras_elmo.layers.ScalarMix(
        num_layers=3, scalar_mix_parameters=S, dtype="mixed_bfloat16"
    )
    out = mix(layers)
    assert out.dtype == "bfloat16"
    w = np.exp(np.float64(S)) / np.exp(np.float64(S)).sum()
    exact = sum(
        w[k] * as_float32(layers[k]).astype(np.float64) for k in (0, 1, 2)
    )
    # One rounding to bfloat16: within half a step (at most 2^-8 relative).
    np.testing.assert_allclose(
        as_float32(out), exact, rtol=2.0**-8 * 1.01, atol=1e-30
    )
