"""Text in the three forms `ElmoLayer` takes, as string tokens `[B, T]`.

A batch of text reaches a model in one of three forms, all meaning the
same padded string tokens `[B, T]` (`""` = padding, on the right):

- padded tokens `[B, T]`, as they are;
- ragged tokens `[B, (n_i)]` (`tf.strings.split(sentences)`), padded with
  `""` to the longest row;
- sentences `[B]`, split like Python's `str.split()`: runs of Unicode
  whitespace separate tokens and no token is empty; the rule of the
  SavedModel's `default` signature and of `keras-elmo embed`.

`pad_tokens` builds padded tokens from Python lists (what `fit` and
`predict` take: Keras' array adapter accepts no NumPy string array).
"""

from collections.abc import Mapping
from collections.abc import Set

import keras
import numpy as np

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.utils import is_tensorflow

# Characters Python's `str.split()` treats as whitespace besides the six
# ASCII ones `tf.strings.split` knows; mapped to " " first, so in-graph
# tokenization equals `line.split()` (what `keras-elmo embed` does).
# RE2 syntax; invalid UTF-8 bytes never match and are kept as they are.
UNICODE_WHITESPACE = (
    r"[\x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}"
    r"\x{2029}\x{202f}\x{205f}\x{3000}]"
)


def split_words(text):
    """Sentences `[B]` -> ragged tokens `[B, (n_i)]`, in graph.

    Splits like Python's `str.split()` on valid UTF-8 (runs of Unicode
    whitespace, no empty tokens) and keeps invalid bytes inside tokens.
    Core TensorFlow ops only (`StaticRegexReplace`, `StringSplitV2`).
    """
    import tensorflow as tf

    text = tf.strings.regex_replace(text, UNICODE_WHITESPACE, " ")
    return tf.strings.split(text)


def dense_tokens(inputs):
    """Ragged tokens `[B, (n_i)]` or sentences `[B]` -> padded string
    tokens `[B, T]` (`""` = padding); anything else is returned as it is.

    TensorFlow tensors only (the forms a string tensor can take there).
    """
    import tensorflow as tf

    if isinstance(inputs, tf.RaggedTensor):
        if inputs.dtype == tf.string and len(inputs.shape) == 2:
            return inputs.to_tensor("")
        return inputs
    is_string = keras.backend.standardize_dtype(inputs.dtype) == "string"
    if is_string and len(inputs.shape) == 1:
        return split_words(inputs).to_tensor("")
    return inputs


def token_shape(inputs_shape):
    """`(B, T)` of an inputs shape in any form: `[B, T, ...]` (padded
    tokens or char ids) or `[B]` (sentences: `T` is known only once they
    are split)."""
    shape = tuple(inputs_shape)
    return shape[:2] if len(shape) >= 2 else shape[:1] + (None,)


def describe(inputs):
    """A short description of a received value for error messages:
    its type, and dtype and shape where it has them."""
    if isinstance(inputs, Mapping):
        return f"a dict with keys {sorted(map(str, inputs))[:8]}"
    dtype = getattr(inputs, "dtype", None)
    shape = getattr(inputs, "shape", None)
    name = type(inputs).__name__
    if dtype is None or shape is None:
        return f"{name}: {inputs!r:.80}"
    dtype = str(getattr(dtype, "name", dtype))
    return f"{name} of dtype {dtype} and shape {tuple(shape)}"


def is_python_strings(inputs):
    """True for a (nested) list of str or bytes, or a NumPy string array
    (an empty list counts: no batch to tell)."""
    if isinstance(inputs, np.ndarray):
        return inputs.dtype.kind in "USO"
    while isinstance(inputs, (list, tuple)):
        if not inputs:
            return True
        inputs = inputs[0]
    return isinstance(inputs, (str, bytes))


def python_tokens(inputs, argument="inputs"):
    """Python or NumPy strings (`[B, T]` tokens, token lists of any
    lengths, or `[B]` sentences) -> a NumPy object array `[B, T]` of str
    tokens padded with `""` (sentences split with `str.split()`);
    `argument` names the value in errors."""
    array = (
        np.asarray(inputs, dtype=object) if _is_rectangular(inputs) else None
    )
    if array is not None and array.ndim == 2:
        return array
    return _padded(_token_lists(inputs, argument), None)


@keras_elmo_export("keras_elmo.pad_tokens")
def pad_tokens(sentences, length=None):
    """Pads tokenized sentences into the string tokens `[B, T]` a model
    with an `ElmoLayer` takes in `fit`, `predict` or a call.

    Each sentence is a list of str tokens, or a str split on whitespace
    (`str.split()`, the rule of `ElmoLayer` on sentences). Shorter
    sentences are padded with `""` on the right, which `ElmoLayer` masks.

    Args:
        sentences: list of lists of str tokens, or of str sentences.
        length: int or None. `T`: sentences are padded, or cut, to this
            many tokens; None pads to the longest sentence.

    Returns:
        On TensorFlow, a string `tf.Tensor` `[B, T]` (Keras' `fit` and
        `predict` take no NumPy string array); on JAX and PyTorch, a NumPy
        object array `[B, T]` of str, which `ElmoLayer` encodes in NumPy.

    Example:

    >>> tokens = keras_elmo.pad_tokens([["a", "fine", "film"], "dull"])
    >>> tokens.shape
    TensorShape([2, 3])
    >>> tokens[1].numpy().tolist()
    [b'dull', b'', b'']
    """
    if length is not None and (
        isinstance(length, bool)
        or not isinstance(length, (int, np.integer))
        or length < 0
    ):
        raise ValueError(
            "Received an invalid value for argument `length`, expected a "
            f"non-negative int or None, got {length!r}."
        )
    array = _padded(_token_lists(sentences, "sentences"), length)
    if not is_tensorflow():
        return array
    import tensorflow as tf

    return tf.constant(array.astype(str), dtype=tf.string)


def _is_rectangular(inputs):
    if isinstance(inputs, np.ndarray):
        return True
    if not isinstance(inputs, (list, tuple)) or not inputs:
        return False
    first = inputs[0]
    if not isinstance(first, (list, tuple)):
        return False
    return all(
        isinstance(row, (list, tuple)) and len(row) == len(first)
        for row in inputs
    )


def _token_lists(sentences, argument):
    """`sentences` -> list of lists of str, checked (`argument` names it
    in errors)."""
    if isinstance(sentences, np.ndarray):
        sentences = sentences.tolist()
    if isinstance(sentences, (str, bytes, Mapping, Set)) or not isinstance(
        sentences, (list, tuple)
    ):
        raise TypeError(
            f"`{argument}` must be a list of sentences (each a list of str "
            f"tokens or a str), received {describe(sentences)}"
        )
    token_lists = []
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, bytes):
            sentence = sentence.decode("utf-8", "ignore")
        if isinstance(sentence, str):
            token_lists.append(sentence.split())
            continue
        if not isinstance(sentence, (list, tuple)):
            raise TypeError(
                f"`{argument}[{i}]` must be a list of str tokens or a str "
                f"sentence, received {type(sentence).__name__}: "
                f"{sentence!r:.80}"
            )
        tokens = []
        for j, token in enumerate(sentence):
            if isinstance(token, bytes):
                token = token.decode("utf-8", "ignore")
            if not isinstance(token, str):
                raise TypeError(
                    f"`{argument}[{i}][{j}]` must be a str token, received "
                    f"{type(token).__name__}: {token!r:.80}"
                )
            tokens.append(token)
        token_lists.append(tokens)
    return token_lists


def _padded(token_lists, length):
    steps = max(map(len, token_lists), default=0) if length is None else length
    array = np.full((len(token_lists), steps), "", dtype=object)
    for i, tokens in enumerate(token_lists):
        tokens = tokens[:steps]
        array[i, : len(tokens)] = tokens
    return array
