"""`check_char_ids`: the biLM's input check, with errors that say why."""

import keras
import numpy as np

from keras_elmo.text import char_vocab


def check_char_ids(char_ids, num_characters=char_vocab.NUM_CHARACTERS):
    """Validates a `BiLM` input; returns it (a nested list as an array).

    Checks the dtype (integer) and shape (`[B, T, 50]`) of any input, and
    for concrete values (NumPy arrays, eager tensors) that every id is in
    `[0, num_characters)` (262 for UTF-8 bytes, a Unicode lexicon's rows
    + 1); symbolic tensors are checked at trace time for
    dtype and shape only.
    """
    if isinstance(char_ids, (list, tuple)):
        char_ids = np.asarray(char_ids)
    dtype = getattr(char_ids, "dtype", None)
    shape = getattr(char_ids, "shape", None)
    if dtype is None or shape is None:
        raise TypeError(
            "`char_ids` must be an int array [B, T, 50] (see "
            f"keras_elmo.batch_to_ids), received {type(char_ids).__name__}: "
            f"{char_ids!r:.80}"
        )
    dtype = keras.backend.standardize_dtype(
        dtype
        if not isinstance(dtype, np.dtype) or dtype.kind not in "USO"
        else "string"
    )
    if dtype == "string":
        raise TypeError(
            "Received an invalid value for argument `char_ids`, expected "
            "int char ids [B, T, 50], got a string tensor of shape "
            f"{tuple(shape)}; map string tokens with "
            "keras_elmo.layers.CharacterIds or use ElmoLayer."
        )
    if not (dtype.startswith("int") or dtype.startswith("uint")):
        raise TypeError(
            "Received an invalid value for argument `char_ids`, expected "
            "integer char ids (int32, see keras_elmo.batch_to_ids), got "
            f"dtype {dtype}."
        )
    try:
        shape = tuple(shape)
    except ValueError:  # a graph tensor of unknown rank: checked later
        return char_ids
    width = char_vocab.MAX_CHARS_PER_TOKEN
    if len(shape) != 3 or shape[-1] not in (None, width):
        raise ValueError(
            "Received an invalid value for argument `char_ids`, expected "
            f"shape [B, T, {width}], got shape {shape}."
        )
    if isinstance(char_ids, np.ndarray):
        values = char_ids
    elif hasattr(char_ids, "numpy"):  # eager tensors only
        values = np.asarray(char_ids.numpy())
    else:
        return char_ids
    if values.size:
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= num_characters:
            bad = low if low < 0 else high
            where = tuple(int(i) for i in np.argwhere(values == bad)[0])
            raise ValueError(
                "Received an invalid value for argument `char_ids`, "
                f"expected ids in [0, {num_characters}), got "
                f"{bad} at index {where}."
            )
    return char_ids
