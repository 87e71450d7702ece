"""Embedding each distinct token of a batch once (`UniqueTokens`)."""

import keras
import tensorflow as tf
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.utils.backend import is_tensorflow


@keras_elmo_export("keras_elmo.layers.UniqueTokens")
class UniqueTokens(keras.layers.Layer):
    """The distinct tokens of a batch, and where each token's copy went.

    A token's context-free embedding (char-CNN, highway, projection) depends
    on its 50 character ids alone, so a batch needs it once per distinct
    token. For `char_ids` `[B, T, 50]` this layer returns

        unique  [U, 1, 50]   each distinct row once, in first-seen order,
                             after one all-zero row (so an empty batch and
                             padding tokens are handled alike)
        inverse [B, T]       int32: char_ids[b, t] = unique[inverse[b, t], 0]

    and `GatherUniqueTokens` maps `[U, 1, D]` embeddings back to `[B, T, D]`:

        x[b, t] = embed(unique)[inverse[b, t], 0].

    The result equals embedding every token (the same per-token arithmetic
    on fewer rows). Real text repeats tokens heavily: in 64 sentences of 20
    tokens about half are repeats, and the token embedding is about a
    quarter of the `original` biLM's FLOPs. The rows are found with
    TensorFlow's `UniqueV2`. On other backends (JAX, whose compiled
    functions need static shapes) every token is kept: `unique` is the
    zero row then each `[b, t]` row in order, `inverse[b, t] = 1 + b T +
    t`; the same outputs, without the saving.

    Call arguments:
        char_ids: int tensor `[B, T, 50]`.

    Returns:
        `(unique, inverse)`: int32 `[U, 1, 50]` and int32 `[B, T]`.
    """

    def call(self, char_ids):
        char_ids = ops.cast(char_ids, "int32")
        shape = ops.shape(char_ids)
        flat = ops.reshape(char_ids, (-1, shape[-1]))
        flat = ops.pad(flat, [[1, 0], [0, 0]])
        if not is_tensorflow():
            unique = flat
            inverse = ops.arange(ops.shape(flat)[0], dtype="int32")
        else:
            unique, inverse = tf.raw_ops.UniqueV2(
                x=flat, axis=tf.constant([0], tf.int64), out_idx=tf.int32
            )
        inverse = ops.reshape(inverse[1:], (shape[0], shape[1]))
        width = char_ids.shape[-1] or shape[-1]
        return ops.reshape(unique, (-1, 1, width)), inverse

    def compute_output_spec(self, char_ids):
        return (
            keras.KerasTensor((None, 1, char_ids.shape[-1]), dtype="int32"),
            keras.KerasTensor(tuple(char_ids.shape[:2]), dtype="int32"),
        )

    def compute_mask(self, char_ids, mask=None):
        return None


@keras_elmo_export("keras_elmo.layers.GatherUniqueTokens")
class GatherUniqueTokens(keras.layers.Layer):
    """`[U, 1, D]` values per distinct token -> `[B, T, D]` (`UniqueTokens`).

    Call arguments:
        unique_values: float tensor `[U, 1, D]`.
        inverse: int tensor `[B, T]` from `UniqueTokens`.

    Returns:
        `[B, T, D]`, row `(b, t)` = `unique_values[inverse[b, t], 0]`.
    """

    def call(self, unique_values, inverse):
        return ops.take(unique_values[:, 0, :], inverse, axis=0)

    def compute_output_spec(self, unique_values, inverse):
        return keras.KerasTensor(
            tuple(inverse.shape) + (unique_values.shape[-1],),
            dtype=unique_values.dtype,
        )

    def compute_mask(self, unique_values, inverse, mask=None):
        return None
