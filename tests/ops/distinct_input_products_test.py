"""First-layer input products once per distinct token: the same numbers
as the full product (NumPy re-derivation), shared between equal rows,
and the packed biLSTM at inference still equals the padded one."""

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.ops.bilstm_layouts import distinct_input_products


def _token_steps(rng, vocabulary, positions, width, dtype=np.float32):
    """`[N, 2, D]` steps drawn from `vocabulary` token vectors, the
    backward direction a permutation of the forward one."""
    vectors = rng.normal(size=(vocabulary, width)).astype(dtype)
    ids = rng.integers(0, vocabulary, size=positions)
    forward = vectors[ids]
    backward = forward[rng.permutation(positions)]
    return np.stack([forward, backward], axis=1), ids


def test_equals_numpy_products_and_equal_rows_share_them():
    rng = np.random.default_rng(0)
    steps, _ = _token_steps(rng, vocabulary=7, positions=50, width=6)
    kernel = rng.normal(size=(2, 6, 12)).astype(np.float32)
    bias = rng.normal(size=(2, 12)).astype(np.float32)
    got = distinct_input_products(
        tf.constant(steps), tf.constant(kernel), tf.constant(bias)
    ).numpy()
    assert got.shape == (50, 2, 12)
    x = steps.astype(np.float64)
    want = np.einsum("ndp,dpg->ndg", x, kernel.astype(np.float64)) + bias
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Equal inputs give bit-equal rows, in each direction.
    for d in (0, 1):
        for row in np.unique(steps[:, d], axis=0):
            same = got[(steps[:, d] == row).all(axis=1), d]
            assert (same == same[0]).all()


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.bfloat16])
def test_any_float_width_and_an_empty_batch(dtype):
    rng = np.random.default_rng(1)
    steps, _ = _token_steps(rng, vocabulary=3, positions=9, width=4)
    kernel = rng.normal(size=(2, 4, 8))
    bias = rng.normal(size=(2, 8))
    args = [tf.cast(a, dtype) for a in (steps, kernel, bias)]
    got = tf.cast(distinct_input_products(*args), tf.float64).numpy()
    x, w, b = [tf.cast(a, tf.float64).numpy() for a in args]
    want = np.einsum("ndp,dpg->ndg", x, w) + b
    tolerance = 5e-2 if dtype == tf.bfloat16 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    empty = distinct_input_products(tf.zeros((0, 2, 4), dtype), *args[1:])
    assert empty.shape == (0, 2, 8)


def test_packed_bilstm_on_repeated_tokens_equals_the_padded_one():
    """Token rows repeated within and across sentences (as `<S>`, `the`):
    the packed layer at inference (distinct first-layer products) equals
    the padded loop (every product) within float rounding."""
    rng = np.random.default_rng(2)
    vocabulary = rng.normal(size=(5, 8)).astype(np.float32)
    lengths = np.array([6, 1, 4, 6])
    ids = rng.integers(0, 5, size=(4, 6))
    inputs = (
        vocabulary[ids] * (np.arange(6)[None, :] < lengths[:, None])[..., None]
    )
    mask = np.arange(6)[None, :] < lengths[:, None]
    layer = ResidualBiLSTM(units=16, projection_dim=8, num_layers=2)
    packed = layer(inputs, mask=mask, training=False)
    layer.packed = False
    padded = layer(inputs, mask=mask, training=False)
    for got, want in zip(packed, padded):
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6
        )
