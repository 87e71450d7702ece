"""Layers that rearrange the token axis around the char CNN, with no weights.

`AddSentenceBoundaries` / `RemoveSentenceBoundaries` add and strip the
`<S>` / `</S>` tokens (`[B, T, 50]` -> `[B, T + 2, 50]` and back),
`AddWordBoundaries` does the same for word ids, and `TokenMask` marks the
real tokens. `UniqueTokens` / `GatherUniqueTokens` embed each distinct
token of a batch once: the `U` distinct char-id rows go through the
char CNN, and their features are gathered back to `[B, T, D]`.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab
from keras_elmo.utils import is_tensorflow


def token_mask(char_ids):
    """`[B, T]` bool: True where a token row has any id > 0."""
    return ops.any(ops.greater(char_ids, 0), axis=-1)


def sequence_lengths(char_ids):
    """`[B]` int32: the number of real tokens in each row."""
    return ops.sum(ops.cast(token_mask(char_ids), "int32"), axis=-1)


@keras_elmo_export("keras_elmo.layers.AddSentenceBoundaries")
class AddSentenceBoundaries(keras.layers.Layer):
    """Wraps each sentence of char ids in `<S>` ... `</S>`.

    Row `b` with `n_b` tokens becomes `[<S>, tok_1..tok_n, </S>, 0, ...]`,
    `T + 2` positions long (`</S>` at position `n_b + 1`), as AllenNLP's
    `add_sentence_boundary_token_ids`. Tokens must be right-padded.

    Args:
        bos_ids: None (bilm-tf's `<S>`) or 50 ints, the char ids of the
            begin-of-sentence token (a Unicode lexicon's `<bos>`).
        eos_ids: None (bilm-tf's `</S>`) or 50 ints, likewise.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        char_ids: int tensor `[B, T, 50]`.

    Returns:
        int32 tensor `[B, T + 2, 50]`.

    Masking: produces no mask; apply `TokenMask` to the output for it
    (`n_b + 2` True per row).
    """

    def __init__(self, bos_ids=None, eos_ids=None, **kwargs):
        super().__init__(**kwargs)
        self.bos_ids = None if bos_ids is None else [int(i) for i in bos_ids]
        self.eos_ids = None if eos_ids is None else [int(i) for i in eos_ids]

    def call(self, char_ids):
        char_ids = ops.cast(char_ids, "int32")
        lengths = sequence_lengths(char_ids)[:, None, None]
        padded = ops.pad(char_ids, [[0, 0], [1, 1], [0, 0]])
        positions = ops.arange(ops.shape(padded)[1], dtype="int32")
        positions = positions[None, :, None]
        bos = ops.convert_to_tensor(
            char_vocab.BOS_TOKEN_IDS if self.bos_ids is None else self.bos_ids,
            "int32",
        )
        eos = ops.convert_to_tensor(
            char_vocab.EOS_TOKEN_IDS if self.eos_ids is None else self.eos_ids,
            "int32",
        )
        out = ops.where(ops.equal(positions, 0), bos, padded)
        return ops.where(ops.equal(positions, lengths + 1), eos, out)

    def compute_output_shape(self, input_shape):
        steps = None if input_shape[1] is None else input_shape[1] + 2
        return (input_shape[0], steps, input_shape[2])

    def compute_output_spec(self, char_ids, mask=None):
        return keras.KerasTensor(
            self.compute_output_shape(char_ids.shape), dtype="int32"
        )

    def get_config(self):
        config = super().get_config()
        config.update({"bos_ids": self.bos_ids, "eos_ids": self.eos_ids})
        return config


@keras_elmo_export("keras_elmo.layers.AddWordBoundaries")
class AddWordBoundaries(keras.layers.Layer):
    """Wraps each sentence of word ids in the `<bos>` ... `<eos>` words.

    The word-id counterpart of `AddSentenceBoundaries`, for models with a
    word-embedding branch: row `b` with `n_b` tokens (from `token_mask`)
    becomes `[bos, w_1..w_n, eos, pad, ...]`, `T + 2` long.

    Args:
        bos_id: int. Word id of the begin-of-sentence word.
        eos_id: int. Word id of the end-of-sentence word.
        pad_id: int. Word id after `eos` (never used by the model: the
            positions are masked).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        word_ids: int tensor `[B, T]`.
        token_mask: bool tensor `[B, T]`, True for real tokens.

    Returns:
        int32 tensor `[B, T + 2]`.
    """

    def __init__(self, bos_id, eos_id, pad_id, **kwargs):
        super().__init__(**kwargs)
        self.bos_id, self.eos_id = int(bos_id), int(eos_id)
        self.pad_id = int(pad_id)

    def call(self, word_ids, token_mask):
        word_ids = ops.cast(word_ids, "int32")
        lengths = ops.sum(ops.cast(token_mask, "int32"), axis=-1)[:, None]
        padded = ops.pad(
            word_ids, [[0, 0], [1, 1]], constant_values=self.pad_id
        )
        positions = ops.arange(ops.shape(padded)[1], dtype="int32")[None, :]
        out = ops.where(ops.equal(positions, 0), self.bos_id, padded)
        return ops.where(ops.equal(positions, lengths + 1), self.eos_id, out)

    def compute_output_shape(self, input_shape, token_mask_shape=None):
        steps = None if input_shape[1] is None else input_shape[1] + 2
        return (input_shape[0], steps)

    def compute_output_spec(self, word_ids, token_mask):
        return keras.KerasTensor(
            self.compute_output_shape(word_ids.shape), dtype="int32"
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "bos_id": self.bos_id,
                "eos_id": self.eos_id,
                "pad_id": self.pad_id,
            }
        )
        return config


@keras_elmo_export("keras_elmo.layers.RemoveSentenceBoundaries")
class RemoveSentenceBoundaries(keras.layers.Layer):
    """Drops the `<S>` / `</S>` positions and zeroes padding.

    Call arguments:
        inputs: float tensor `[B, T + 2, D]` (with boundaries).
        mask: bool tensor `[B, T]`, the token mask without boundaries.

    Returns:
        `inputs[:, 1:-1] * mask[..., None]`, `[B, T, D]`; the `</S>` of a
        short row falls on a padding position and becomes 0.

    Masking: produces `mask`.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask):
        stripped = inputs[:, 1:-1]
        return stripped * ops.cast(mask, stripped.dtype)[..., None]

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, inputs_shape):
        steps = None if inputs_shape[1] is None else inputs_shape[1] - 2
        return (inputs_shape[0], steps, inputs_shape[2])


@keras_elmo_export("keras_elmo.layers.TokenMask")
class TokenMask(keras.layers.Layer):
    """`[B, T, 50]` char ids -> `[B, T]` bool: True for real tokens.

    A token is real when any of its ids is > 0 (padding rows are all 0).
    """

    def call(self, char_ids):
        return token_mask(char_ids)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1])

    def compute_output_spec(self, char_ids):
        return keras.KerasTensor(
            self.compute_output_shape(char_ids.shape), dtype="bool"
        )


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
    TensorFlow's `UniqueV2`. A compiled JAX function needs static shapes:
    there, with `distinct_rows` set to a bound `U >= ` the distinct rows
    (zero row included), `jnp.unique(..., size=U)` returns them in sorted
    order (the zero row first), then all-zero fill rows up to `U`, whose
    embeddings nothing gathers; a bound below the count would drop rows,
    so the caller computes it from the batch (the JAX training step:
    `keras_elmo.training.neutral_trainer.distinct_rows_bound`). Otherwise
    (`distinct_rows` None, PyTorch) every token is kept: `unique` is the
    zero row then each `[b, t]` row in order, `inverse[b, t] = 1 + b T +
    t`; the same outputs, without the saving.

    Call arguments:
        char_ids: int tensor `[B, T, 50]`.

    Returns:
        `(unique, inverse)`: int32 `[U, 1, 50]` and int32 `[B, T]`.
    """

    # A static bound on the distinct rows, for `jax.jit` (class docstring);
    # set by the caller around a trace, not part of the layer's config.
    distinct_rows = None

    def call(self, char_ids):
        char_ids = ops.cast(char_ids, "int32")
        shape = ops.shape(char_ids)
        flat = ops.reshape(char_ids, (-1, shape[-1]))
        flat = ops.pad(flat, [[1, 0], [0, 0]])
        if self.distinct_rows and keras.config.backend() == "jax":
            import jax.numpy as jnp

            unique, inverse = jnp.unique(
                flat,
                axis=0,
                size=self.distinct_rows,
                fill_value=0,
                return_inverse=True,
            )
            inverse = ops.cast(ops.reshape(inverse, (-1,)), "int32")
        elif not is_tensorflow():
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
