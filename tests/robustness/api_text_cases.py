"""API cases of the text side: `batch_to_ids` and `CharacterIds`.

Both must give the NumPy re-derivation of the tokens' UTF-8 bytes
(`text_inputs.reference_ids`), or a TypeError naming the argument,
what was expected and what was received.
"""

import keras
import numpy as np
import tensorflow as tf

import keras_elmo
from keras_elmo.layers import CharacterIds
from tests.conftest import padded
from tests.robustness.case_table import error
from tests.robustness.case_table import ok
from tests.robustness.text_inputs import BAD_UTF8
from tests.robustness.text_inputs import LONG_SENTENCE
from tests.robustness.text_inputs import LONG_TOKEN
from tests.robustness.text_inputs import MIXED
from tests.robustness.text_inputs import NUL
from tests.robustness.text_inputs import reference_ids

B2I = "batch_to_ids"
CI = "CharacterIds"


# === batch_to_ids ===


def b2i_equals_reference(sentences, shape):
    def run(fx):
        ids = keras_elmo.batch_to_ids(sentences)
        assert ids.dtype == np.int32 and ids.shape == shape
        np.testing.assert_array_equal(ids, reference_ids(sentences))

    return run


def b2i_numpy_array(fx):
    array = np.array([["Hello", "!"], ["a", "b"]])
    np.testing.assert_array_equal(
        keras_elmo.batch_to_ids(array),
        keras_elmo.batch_to_ids([["Hello", "!"], ["a", "b"]]),
    )


def b2i_long_token(fx):
    ids = keras_elmo.batch_to_ids([[LONG_TOKEN, "y"]])
    np.testing.assert_array_equal(
        ids, keras_elmo.batch_to_ids([["é" * 24, "y"]])
    )
    assert ids[0, 0, 49] == 260  # EOW in the last slot


def b2i_call(value):
    return lambda fx: keras_elmo.batch_to_ids(value)


# === CharacterIds ===


def ci_equals_batch_to_ids(sentences):
    def run(fx):
        ids = CharacterIds()(padded(sentences))
        np.testing.assert_array_equal(ids, keras_elmo.batch_to_ids(sentences))

    return run


def ci_raw_bytes(fx):
    ids = CharacterIds()(tf.constant([BAD_UTF8]))
    np.testing.assert_array_equal(ids, reference_ids([BAD_UTF8]))


def ci_nested_list(fx):
    ids = CharacterIds()([["Hello", ""], ["a", "b"]])
    np.testing.assert_array_equal(
        ids, keras_elmo.batch_to_ids([["Hello"], ["a", "b"]])
    )


def ci_empty_batch(fx):
    ids = CharacterIds()(tf.zeros([0, 0], tf.string))
    assert ids.shape == (0, 0, 50) and ids.dtype == tf.int32


def ci_token_lists(fx):
    ids = CharacterIds()([["a"], ["b", "c"]])
    np.testing.assert_array_equal(
        ids, keras_elmo.batch_to_ids([["a"], ["b", "c"]])
    )


def ci_call(value):
    return lambda fx: CharacterIds()(value)


ROWS = [
    ok(
        B2I,
        "empty batch `[]`",
        "shape (0, 0, 50)",
        b2i_equals_reference([], (0, 0, 50)),
    ),
    ok(
        B2I,
        "batch of one empty sentence `[[]]`",
        "shape (1, 0, 50)",
        b2i_equals_reference([[]], (1, 0, 50)),
    ),
    ok(
        B2I,
        'empty token `""`',
        "all-zero (padding) row",
        b2i_equals_reference([["", "a"]], (1, 2, 50)),
    ),
    ok(
        B2I,
        'whitespace-only tokens `" "`, `"\\t"`',
        "real tokens of bytes 32 / 9 (NumPy re-derivation)",
        b2i_equals_reference([[" ", "\t"]], (1, 2, 50)),
    ),
    ok(
        B2I,
        "10,000-token sentence",
        "shape (1, 10000, 50), every row re-derived in NumPy",
        b2i_equals_reference([LONG_SENTENCE], (1, 10_000, 50)),
    ),
    ok(
        B2I,
        "1,000-byte token",
        "first 48 bytes kept, EOW in slot 49 (= the 48-byte token)",
        b2i_long_token,
    ),
    ok(
        B2I,
        "lone surrogates (Python's invalid UTF-8) `\\ud800x`",
        "surrogates dropped as AllenNLP's encode('utf-8', 'ignore')",
        b2i_equals_reference([["\ud800x", "\udfff"]], (1, 2, 50)),
    ),
    ok(
        B2I,
        "NUL bytes `a\\x00b`, `\\x00`",
        "byte 0 -> id 1 (NumPy re-derivation)",
        b2i_equals_reference([NUL], (1, 2, 50)),
    ),
    ok(
        B2I,
        "mixed scripts, combining marks, emoji and ZWJ sequences",
        "NumPy re-derivation of the UTF-8 bytes",
        b2i_equals_reference([MIXED, ["<S>", "</S>"]], (2, 8, 50)),
    ),
    ok(
        B2I,
        "NumPy string array instead of lists",
        "same ids as the lists",
        b2i_numpy_array,
    ),
    error(
        B2I,
        "`None`",
        TypeError,
        ["`sentences`", "list of lists of str", "NoneType"],
        b2i_call(None),
    ),
    error(
        B2I,
        'a bare string `"a b"`',
        TypeError,
        ["`sentences`", "list of lists of str", "str: 'a b'"],
        b2i_call("a b"),
    ),
    error(
        B2I,
        'untokenized sentences `["a b"]`',
        TypeError,
        ["`sentences[0]`", "list of str tokens", "str: 'a b'"],
        b2i_call(["a b"]),
    ),
    error(
        B2I,
        "bytes token",
        TypeError,
        ["`sentences[0][1]`", "str token", "bytes: b'x'"],
        b2i_call([["a", b"x"]]),
    ),
    error(
        B2I,
        "int token",
        TypeError,
        ["`sentences[1][0]`", "str token", "int: 7"],
        b2i_call([["a"], [7]]),
    ),
    ok(CI, "empty batch `[0, 0]`", "int32 `[0, 0, 50]`", ci_empty_batch),
    ok(
        CI,
        'whitespace-only and empty tokens `" "`, `""`',
        "= batch_to_ids",
        ci_equals_batch_to_ids([[" ", "\t"], ["x"]]),
    ),
    ok(
        CI,
        "10,000-token sentence",
        "= batch_to_ids",
        ci_equals_batch_to_ids([LONG_SENTENCE]),
    ),
    ok(
        CI,
        "1,000-byte token",
        "= batch_to_ids (48 bytes kept)",
        ci_equals_batch_to_ids([[LONG_TOKEN, "y"]]),
    ),
    ok(
        CI,
        "invalid UTF-8 bytes (`\\xff\\xfe`, lone lead byte, encoded surrogate)",
        "raw bytes kept (NumPy re-derivation)",
        ci_raw_bytes,
    ),
    ok(
        CI,
        "NUL bytes, mixed scripts and emoji",
        "= batch_to_ids",
        ci_equals_batch_to_ids([NUL, MIXED]),
    ),
    ok(
        CI,
        "nested Python list of str",
        "= batch_to_ids of the same tokens",
        ci_nested_list,
    ),
    error(
        CI,
        "int32 tensor (char ids or token ids)",
        TypeError,
        ["`tokens`", "string tensor", "int32"],
        ci_call(tf.constant([[1, 2]])),
    ),
    error(
        CI,
        "float NumPy array",
        TypeError,
        ["`tokens`", "string tensor", "float64"],
        ci_call(np.ones([1, 2])),
    ),
    error(
        CI,
        "symbolic int `keras.Input`",
        TypeError,
        ["`tokens`", "string tensor", "int32"],
        ci_call(keras.Input((None,), dtype="int32")),
    ),
    ok(
        CI,
        "ragged nested list (token lists of other lengths)",
        '= batch_to_ids (padded with "")',
        ci_token_lists,
    ),
    error(
        CI,
        "`None`",
        TypeError,
        ["`tokens`", "string tensor", "NoneType"],
        ci_call(None),
    ),
]
