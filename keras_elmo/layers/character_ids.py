"""`CharacterIds`: string tokens -> ELMo character ids, as a Keras layer."""

import keras
import numpy as np

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab
from keras_elmo.text.batch_to_ids import token_to_char_ids
from keras_elmo.text.char_ops import tokens_to_char_ids
from keras_elmo.utils.backend import check_backend
from keras_elmo.utils.backend import is_tensorflow


@keras_elmo_export("keras_elmo.layers.CharacterIds")
class CharacterIds(keras.layers.Layer):
    """Maps string tokens `[B, T]` to ELMo character ids `[B, T, 50]`.

    Runs entirely in the TensorFlow graph (no Python at call time), so a
    model that starts from raw string tokens can be saved, exported and
    served. The ids equal `keras_elmo.batch_to_ids` on the same tokens:
    UTF-8 bytes (at most 48 per token), begin/end-of-word markers, padding
    character 261 inside the 50 slots, and an all-zero row for the empty
    string `""`, which therefore marks a padding position.

    On TensorFlow the layer is in-graph (string tensors). On JAX and
    PyTorch (no string tensors) it takes Python or NumPy strings `[B, T]`
    only and encodes them in NumPy, as `keras_elmo.batch_to_ids` does.

    Call arguments:
        tokens: string tensor `[B, T]`; `""` is padding.

    Returns:
        int32 tensor `[B, T, 50]`.

    Raises a `TypeError` naming `tokens` for a non-string input (e.g.
    int char ids, which go straight to `BiLM` instead).

    Masking: produces no Keras mask: the ids carry it (padding tokens are
    all-zero rows), which `CharCNNEmbedding` and `TokenMask` read.

    Example:

    >>> layer = keras_elmo.layers.CharacterIds()
    >>> ids = layer(tf.constant([["Hello", "!"], ["Hi", ""]]))
    >>> ids.shape
    TensorShape([2, 2, 50])
    """

    def __call__(self, tokens, *args, **kwargs):
        is_strings = isinstance(tokens, (list, tuple, str, bytes)) or (
            isinstance(tokens, np.ndarray) and tokens.dtype.kind in "USO"
        )
        if not is_tensorflow():
            check_backend("CharacterIds")
            if not is_strings:
                raise TypeError(
                    "Received an invalid value for argument `tokens`: on the "
                    f"{keras.config.backend()} backend `CharacterIds` takes "
                    "Python or NumPy strings [B, T] only, got "
                    f"{type(tokens).__name__}; or pass ids from "
                    "keras_elmo.batch_to_ids."
                )
            return keras.ops.convert_to_tensor(numpy_char_ids(tokens))
        if is_strings:
            # A nested list of str is one tensor, not a list of inputs.
            tokens = _to_string_tensor(tokens)
        _check_string_dtype(tokens)
        return super().__call__(tokens, *args, **kwargs)

    def call(self, tokens):
        check_backend("CharacterIds")
        return tokens_to_char_ids(tokens)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (char_vocab.MAX_CHARS_PER_TOKEN,)

    def compute_output_spec(self, tokens, mask=None):
        _check_string_dtype(tokens)
        return keras.KerasTensor(
            self.compute_output_shape(tokens.shape), dtype="int32"
        )


def numpy_char_ids(tokens):
    """Python or NumPy strings `[B, T]` -> int32 ids `[B, T, 50]` (NumPy,
    `batch_to_ids`' encoding; bytes are read as UTF-8)."""
    array = np.asarray(tokens, dtype=object)
    if array.ndim != 2:
        raise ValueError(
            "Received an invalid value for argument `tokens`, expected "
            f"strings of shape [B, T], got shape {array.shape}."
        )
    ids = np.zeros(array.shape + (char_vocab.MAX_CHARS_PER_TOKEN,), np.int32)
    for index, token in np.ndenumerate(array):
        if isinstance(token, bytes):
            token = token.decode("utf-8", "ignore")
        if not isinstance(token, str):
            raise TypeError(
                f"`tokens{list(index)}` must be a str token, received "
                f"{type(token).__name__}: {token!r:.80}"
            )
        if token:
            ids[index] = token_to_char_ids(token)
    return ids


def _to_string_tensor(tokens):
    import tensorflow as tf

    try:
        return tf.constant(tokens, dtype=tf.string)
    except (TypeError, ValueError) as e:
        raise TypeError(
            "`tokens` must be a string tensor [B, T] (or a rectangular "
            f"nested list of str), received {type(tokens).__name__}: "
            f"{tokens!r:.80} ({e})"
        ) from None


def _check_string_dtype(tokens):
    dtype = getattr(tokens, "dtype", None)
    if dtype is None:
        raise TypeError(
            "`tokens` must be a string tensor [B, T], received "
            f"{type(tokens).__name__}: {tokens!r:.80}"
        )
    dtype = keras.backend.standardize_dtype(dtype)
    if dtype != "string":
        raise TypeError(
            "Received an invalid value for argument `tokens`, expected a "
            f"string tensor [B, T], got dtype {dtype} with shape "
            f"{tuple(tokens.shape)}. Integer char ids go to "
            "`keras_elmo.BiLM` (or `ElmoLayer`) directly."
        )
