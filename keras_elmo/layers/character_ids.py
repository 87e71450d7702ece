"""`CharacterIds`: string tokens -> ELMo character ids, as a Keras layer."""

import keras

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab
from keras_elmo.text.char_ops import tokens_to_char_ids


@keras_elmo_export("keras_elmo.layers.CharacterIds")
class CharacterIds(keras.layers.Layer):
    """Maps string tokens `[B, T]` to ELMo character ids `[B, T, 50]`.

    Runs entirely in the TensorFlow graph (no Python at call time), so a
    model that starts from raw string tokens can be saved, exported and
    served. The ids equal `keras_elmo.batch_to_ids` on the same tokens:
    UTF-8 bytes (at most 48 per token), begin/end-of-word markers, padding
    character 261 inside the 50 slots, and an all-zero row for the empty
    string `""`, which therefore marks a padding position.

    This layer is TensorFlow-only (string tensors): it needs the
    TensorFlow backend.

    Call arguments:
        tokens: string tensor `[B, T]`; `""` is padding.

    Returns:
        int32 tensor `[B, T, 50]`.

    Masking: produces no Keras mask: the ids carry it (padding tokens are
    all-zero rows), which `CharCNNEmbedding` and `TokenMask` read.

    Example:

    >>> layer = keras_elmo.layers.CharacterIds()
    >>> ids = layer(tf.constant([["Hello", "!"], ["Hi", ""]]))
    >>> ids.shape
    TensorShape([2, 2, 50])
    """

    def call(self, tokens):
        return tokens_to_char_ids(tokens)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (char_vocab.MAX_CHARS_PER_TOKEN,)

    def compute_output_spec(self, tokens, mask=None):
        return keras.KerasTensor(
            self.compute_output_shape(tokens.shape), dtype="int32"
        )
