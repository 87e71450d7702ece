"""Adding and stripping the `<S>` / `</S>` sentence boundary tokens."""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab


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

    Call arguments:
        char_ids: int tensor `[B, T, 50]`.

    Returns:
        int32 tensor `[B, T + 2, 50]`.

    Masking: produces no mask; apply `TokenMask` to the output for it
    (`n_b + 2` True per row).
    """

    def call(self, char_ids):
        char_ids = ops.cast(char_ids, "int32")
        lengths = sequence_lengths(char_ids)[:, None, None]
        padded = ops.pad(char_ids, [[0, 0], [1, 1], [0, 0]])
        positions = ops.arange(ops.shape(padded)[1], dtype="int32")
        positions = positions[None, :, None]
        bos = ops.convert_to_tensor(char_vocab.BOS_TOKEN_IDS, "int32")
        eos = ops.convert_to_tensor(char_vocab.EOS_TOKEN_IDS, "int32")
        out = ops.where(ops.equal(positions, 0), bos, padded)
        return ops.where(ops.equal(positions, lengths + 1), eos, out)

    def compute_output_shape(self, input_shape):
        steps = None if input_shape[1] is None else input_shape[1] + 2
        return (input_shape[0], steps, input_shape[2])

    def compute_output_spec(self, char_ids, mask=None):
        return keras.KerasTensor(
            self.compute_output_shape(char_ids.shape), dtype="int32"
        )


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
