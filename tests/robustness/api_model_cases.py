"""API cases of the models: `BiLM` and `ElmoLayer` on awkward inputs.

An `ok` row compares with the same input alone, a shorter input or a
NumPy re-derivation; an error row expects the argument, what was
expected and what was received in the message.
"""

import keras
import numpy as np
import tensorflow as tf

import keras_elmo
from tests.conftest import padded
from tests.robustness.case_table import error
from tests.robustness.case_table import ok
from tests.robustness.text_inputs import BAD_UTF8
from tests.robustness.text_inputs import LONG_SENTENCE
from tests.robustness.text_inputs import LONG_TOKEN
from tests.robustness.text_inputs import MIXED
from tests.robustness.text_inputs import NUL
from tests.robustness.text_inputs import reference_ids

BILM = "BiLM"
ELMO = "ElmoLayer"
CHAR_IDS = "`char_ids`"


def numpy_outputs(out):
    return {k: np.asarray(v) for k, v in out.items()}


# === BiLM ===


def bilm_empty(shape):
    def run(fx):
        out = fx("tiny_bilm")(np.zeros(shape, np.int32))
        assert out["word_emb"].shape == shape[:2] + (16,)
        assert out["lstm_outputs2"].shape == shape[:2] + (32,)
        assert out["mask"].shape == shape[:2]

    return run


def bilm_padding_rows(fx):
    """An all-padding row is zero and masked; the other row equals itself
    alone."""
    bilm = fx("tiny_bilm")
    ids = keras_elmo.batch_to_ids([["a", "b"], []])
    out = numpy_outputs(bilm(ids))
    alone = numpy_outputs(bilm(ids[:1]))
    assert out["mask"].tolist() == [[True, True], [False, False]]
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        assert not out[key][1].any(), key
        np.testing.assert_allclose(out[key][:1], alone[key], atol=1e-6)


def bilm_long_sentence(fx):
    """10,000 tokens: finite; the forward half of the first 20 positions
    equals the first 20 tokens alone, the backward half of the last 20
    the last 20 alone, and word_emb is context-free."""
    run = fx("compiled_bilm")
    ids = keras_elmo.batch_to_ids([LONG_SENTENCE])
    out = numpy_outputs(run(ids))
    assert out["lstm_outputs2"].shape == (1, 10_000, 32)
    assert np.isfinite(out["lstm_outputs2"]).all()
    head = numpy_outputs(run(ids[:, :20]))
    tail = numpy_outputs(run(ids[:, -20:]))
    for key in ("lstm_outputs1", "lstm_outputs2"):
        np.testing.assert_allclose(
            out[key][:, :20, :16], head[key][..., :16], atol=1e-5
        )
        np.testing.assert_allclose(
            out[key][:, -20:, 16:], tail[key][..., 16:], atol=1e-5
        )
    np.testing.assert_allclose(
        out["word_emb"][:, :20], head["word_emb"], atol=1e-6
    )


def bilm_long_token(fx):
    bilm = fx("tiny_bilm")
    long = numpy_outputs(bilm(keras_elmo.batch_to_ids([[LONG_TOKEN, "y"]])))
    cut = numpy_outputs(bilm(keras_elmo.batch_to_ids([["é" * 24, "y"]])))
    for key, value in cut.items():
        np.testing.assert_array_equal(long[key], value, err_msg=key)


def bilm_batch_independent(sentences):
    """Each sentence of a batch equals the same sentence embedded alone."""

    def run(fx):
        bilm = fx("tiny_bilm")
        out = numpy_outputs(bilm(keras_elmo.batch_to_ids(sentences)))
        for i, sentence in enumerate(sentences):
            alone = numpy_outputs(bilm(keras_elmo.batch_to_ids([sentence])))
            n = len(sentence)
            for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
                np.testing.assert_allclose(
                    out[key][i, :n], alone[key][0], atol=1e-5, err_msg=key
                )
                assert not out[key][i, n:].any(), key

    return run


def bilm_other_int_dtypes(fx):
    bilm = fx("tiny_bilm")
    ids = keras_elmo.batch_to_ids([["int", "dtypes"]])
    expected = numpy_outputs(bilm(ids))
    for dtype in ("int64", "uint16"):
        out = numpy_outputs(bilm(ids.astype(dtype)))
        for key, value in expected.items():
            np.testing.assert_array_equal(out[key], value, err_msg=key)
    nested = numpy_outputs(bilm(ids.tolist()))
    np.testing.assert_array_equal(nested["lstm_outputs2"], out["lstm_outputs2"])


def bilm_call(make):
    return lambda fx: fx("tiny_bilm")(make())


def ids_with(value):
    ids = keras_elmo.batch_to_ids([["a", "b"]])
    ids[0, 1, 3] = value
    return ids


def symbolic_float(fx):
    fx("tiny_bilm")(keras.Input((None, 50), dtype="float32"))


# === ElmoLayer ===


def elmo_strings_equal_ids(sentences):
    """String tokens give exactly what their char ids give."""

    def run(fx):
        layer = fx("elmo_layer")
        by_strings = np.asarray(layer(padded(sentences)))
        by_ids = np.asarray(layer(keras_elmo.batch_to_ids(sentences)))
        np.testing.assert_array_equal(by_strings, by_ids)
        for i, sentence in enumerate(sentences):
            assert not by_ids[i, len(sentence) :].any()

    return run


def elmo_raw_bytes(fx):
    layer = fx("elmo_layer")
    by_strings = np.asarray(layer(tf.constant([BAD_UTF8])))
    by_ids = np.asarray(layer(reference_ids([BAD_UTF8])))
    np.testing.assert_array_equal(by_strings, by_ids)
    assert np.isfinite(by_ids).all()


def elmo_numpy_mix(fx):
    """The output is gamma * sum softmax(s)_j h_j of the BiLM layers."""
    layer, bilm = fx("elmo_layer"), fx("tiny_bilm")
    ids = keras_elmo.batch_to_ids([MIXED, ["a"]])
    out = numpy_outputs(bilm(ids))
    layers = [np.concatenate([out["word_emb"]] * 2, -1)]
    layers += [out["lstm_outputs1"], out["lstm_outputs2"]]
    s = np.array([0.5, -0.25, 1.0])
    w = np.exp(s) / np.exp(s).sum()
    expected = 1.5 * sum(wj * h for wj, h in zip(w, layers))
    expected *= out["mask"][..., None]
    np.testing.assert_allclose(np.asarray(layer(ids)), expected, atol=1e-5)


def elmo_empty_strings(fx):
    out = fx("elmo_layer")(tf.zeros([0, 0], tf.string))
    assert out.shape == (0, 0, 32)


def elmo_sentences_equal_tokens(sentences):
    """Sentences `[B]` give exactly what their split tokens give."""

    def run(fx):
        layer = fx("elmo_layer")
        tokens = [s.split() for s in sentences]
        by_sentences = np.asarray(layer(tf.constant(sentences)))
        by_tokens = np.asarray(layer(padded(tokens)))
        np.testing.assert_array_equal(by_sentences, by_tokens)
        for i, sentence in enumerate(tokens):
            assert not by_sentences[i, len(sentence) :].any()

    return run


def elmo_call(make):
    return lambda fx: fx("elmo_layer")(make())


ROWS = [
    ok(
        BILM,
        "empty batch `[0, 0, 50]`",
        "empty outputs of the right widths",
        bilm_empty((0, 0, 50)),
    ),
    ok(
        BILM,
        "two empty sentences `[2, 0, 50]`",
        "`[2, 0, D]` outputs",
        bilm_empty((2, 0, 50)),
    ),
    ok(
        BILM,
        "an all-padding row next to a real one",
        "zeros and mask False; the real row = itself alone",
        bilm_padding_rows,
    ),
    ok(
        BILM,
        "10,000-token sentence (compiled call)",
        "finite; forward half of the head = head alone, backward "
        "half of the tail = tail alone",
        bilm_long_sentence,
    ),
    ok(
        BILM,
        "1,000-byte token",
        "bit-identical to the 48-byte token",
        bilm_long_token,
    ),
    ok(
        BILM,
        "mixed scripts, emoji, NUL, surrogates, `<S>` in one batch",
        "each sentence = itself alone, zero padding",
        bilm_batch_independent([MIXED, NUL, ["\ud800x", "<S>", " "], ["a"]]),
    ),
    ok(
        BILM,
        "int64 / uint16 ids and a nested list",
        "bit-identical to int32",
        bilm_other_int_dtypes,
    ),
    error(
        BILM,
        "float32 ids",
        TypeError,
        [CHAR_IDS, "integer char ids", "float32"],
        bilm_call(lambda: keras_elmo.batch_to_ids([["a"]]).astype("float32")),
    ),
    error(
        BILM,
        "bool ids",
        TypeError,
        [CHAR_IDS, "integer char ids", "bool"],
        bilm_call(lambda: np.ones([1, 1, 50], bool)),
    ),
    error(
        BILM,
        "string tokens `[B, T]`",
        TypeError,
        [
            CHAR_IDS,
            "int char ids [B, T, 50]",
            "string tensor of shape (1, 1)",
        ],
        bilm_call(lambda: tf.constant([["a"]])),
    ),
    error(
        BILM,
        "symbolic float `keras.Input`",
        TypeError,
        [CHAR_IDS, "integer char ids", "float32"],
        symbolic_float,
    ),
    error(
        BILM,
        "rank 2 `[T, 50]`",
        ValueError,
        [CHAR_IDS, "shape [B, T, 50]", "(2, 50)"],
        bilm_call(lambda: keras_elmo.batch_to_ids([["a", "b"]])[0]),
    ),
    error(
        BILM,
        "rank 4",
        ValueError,
        [CHAR_IDS, "shape [B, T, 50]", "(1, 1, 2, 50)"],
        bilm_call(lambda: keras_elmo.batch_to_ids([["a", "b"]])[None]),
    ),
    error(
        BILM,
        "49 ids per token",
        ValueError,
        [CHAR_IDS, "shape [B, T, 50]", "(1, 1, 49)"],
        bilm_call(lambda: np.ones([1, 1, 49], np.int32)),
    ),
    error(
        BILM,
        "id 262 (outside the 262-row char vocabulary)",
        ValueError,
        [CHAR_IDS, "ids in [0, 262)", "got 262 at index (0, 1, 3)"],
        bilm_call(lambda: ids_with(262)),
    ),
    error(
        BILM,
        "negative id -1",
        ValueError,
        [CHAR_IDS, "ids in [0, 262)", "got -1 at index (0, 1, 3)"],
        bilm_call(lambda: ids_with(-1)),
    ),
    error(
        BILM,
        "huge id 2**31 - 1 in an eager tensor",
        ValueError,
        [CHAR_IDS, "ids in [0, 262)", "got 2147483647"],
        bilm_call(lambda: tf.constant(ids_with(2**31 - 1))),
    ),
    ok(
        ELMO,
        "empty string batch `[0, 0]`",
        "`[0, 0, 32]`",
        elmo_empty_strings,
    ),
    ok(
        ELMO,
        "mixed scripts, emoji, NUL, whitespace tokens as strings",
        "bit-identical to their char ids; zero padding",
        elmo_strings_equal_ids([MIXED, NUL + [" "], ["x"]]),
    ),
    ok(
        ELMO,
        "invalid UTF-8 string tokens",
        "= the NumPy re-derived char ids through the layer",
        elmo_raw_bytes,
    ),
    ok(
        ELMO,
        "mixed scripts (char ids)",
        "NumPy `gamma * sum softmax(s)_j h_j` of the BiLM layers",
        elmo_numpy_mix,
    ),
    error(
        ELMO,
        "float32 char ids",
        TypeError,
        [CHAR_IDS, "integer char ids", "float32"],
        elmo_call(lambda: keras_elmo.batch_to_ids([["a"]]).astype("float32")),
    ),
    error(
        ELMO,
        "char id 300",
        ValueError,
        [CHAR_IDS, "ids in [0, 262)", "got 300"],
        elmo_call(lambda: ids_with(300)),
    ),
    error(
        ELMO,
        "rank-3 string tokens",
        ValueError,
        ["`inputs`", "string tokens of shape [B, T]", "(1, 1, 1)"],
        elmo_call(lambda: tf.constant([[["a"]]])),
    ),
    ok(
        ELMO,
        "rank-1 strings (sentences, Unicode whitespace inside)",
        "bit-identical to their `str.split()` tokens padded; zero padding",
        elmo_sentences_equal_tokens(["a  b\u3000c", "\xa0d\te ", ""]),
    ),
    error(
        ELMO,
        "rank-2 int char ids (no character axis)",
        ValueError,
        ["`inputs`", "char ids of shape [B, T, 50]", "(1, 50)"],
        elmo_call(lambda: keras_elmo.batch_to_ids([["a"]])[0]),
    ),
]
