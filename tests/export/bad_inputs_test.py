"""Awkward inputs through both signatures: a correct answer or a clear
InvalidArgumentError, never a crash.

Each row of `CASES` names the signature, the inputs, and the expected
outcome: `("ok", check)` or `("error", message regex)`.
"""

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.export.signatures import MAX_TOKENS

WIDTH = 32  # 2P of the tiny preset
LAYERS = ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo")
LONG = " ".join(f"w{i % 97}" for i in range(5000))


def default(model, text):
    return model.signatures["default"](text=tf.constant(text, tf.string))


def tokens(model, rows, lengths):
    rows = [[t.encode() if isinstance(t, str) else t for t in r] for r in rows]
    return model.signatures["tokens"](
        tokens=tf.constant(rows, tf.string),
        sequence_len=tf.constant(lengths, tf.int32),
    )


def assert_finite(out):
    for key, value in out.items():
        assert np.isfinite(value.numpy()).all(), key


def assert_empty_rows(out, rows):
    for row in rows:
        assert out["sequence_len"].numpy()[row] == 0
        assert not out["elmo"].numpy()[row].any()
        assert not out["default"].numpy()[row].any()


def assert_same(a, b, atol=1e-6):
    """Equal outputs where `b` is the reference (positions of `a` kept)."""
    for key in LAYERS:
        np.testing.assert_allclose(a[key], b[key], atol=atol, err_msg=key)


def check_empty_string(model):
    out = default(model, [""])
    assert out["elmo"].shape == (1, 0, WIDTH)
    assert out["default"].shape == (1, WIDTH)
    assert_empty_rows(out, [0])


def check_whitespace_only(model):
    out = default(model, [" \t \n\r\x0b\x0c \u3000 "])
    assert out["elmo"].shape == (1, 0, WIDTH)
    assert_empty_rows(out, [0])


def check_empty_batch_text(model):
    out = default(model, np.zeros([0], dtype=object))
    assert out["elmo"].shape == (0, 0, WIDTH)
    assert out["word_emb"].shape == (0, 0, WIDTH // 2)
    assert out["default"].shape == (0, WIDTH)
    assert out["sequence_len"].shape == (0,)


def check_blank_rows_in_a_batch(model):
    out = default(model, ["a b", "", "   "])
    alone = default(model, ["a b"])
    assert_same({k: v[:1] for k, v in out.items()}, alone)
    assert_empty_rows(out, [1, 2])


def check_long_sentence_text(model):
    out = default(model, [LONG])
    assert out["elmo"].shape == (1, MAX_TOKENS, WIDTH)
    assert out["sequence_len"].numpy().tolist() == [MAX_TOKENS]
    first = " ".join(LONG.split()[:MAX_TOKENS])
    assert_same(out, default(model, [first]))


def check_long_token_text(model):
    out = default(model, ["x" * 1000 + " y"])
    assert_same(out, default(model, ["x" * 48 + " y"]), atol=0)


def check_invalid_utf8_text(model):
    out = default(model, [b"\xff\xfe abc \xc3"])
    assert out["sequence_len"].numpy().tolist() == [3]
    assert_finite(out)
    by_tokens = tokens(model, [[b"\xff\xfe", b"abc", b"\xc3"]], [3])
    assert_same(out, by_tokens)


def check_nul_bytes_text(model):
    out = default(model, [b"a\x00b c", b"\x00"])
    assert out["sequence_len"].numpy().tolist() == [2, 1]
    assert_finite(out)
    by_tokens = tokens(model, [[b"a\x00b", b"c"], [b"\x00", b""]], [2, 1])
    assert_same(out, by_tokens)


def check_unicode_whitespace_text(model):
    out = default(model, ["a\u00a0b\u3000c\u2009d"])
    assert out["sequence_len"].numpy().tolist() == [4]
    assert_same(out, default(model, ["a b c d"]), atol=0)


def check_all_padding_row(model):
    out = tokens(model, [["", ""], ["a", ""]], [2, 1])
    assert_empty_rows(out, [0])
    assert out["sequence_len"].numpy().tolist() == [0, 1]


def check_zero_length(model):
    out = tokens(model, [["a", "b"]], [0])
    assert out["elmo"].shape == (1, 2, WIDTH)
    assert_empty_rows(out, [0])


def check_length_beyond_steps_is_clamped(model):
    out = tokens(model, [["a", "b"]], [7])
    assert out["sequence_len"].numpy().tolist() == [2]
    assert_same(out, tokens(model, [["a", "b"]], [2]), atol=0)


def check_tokens_beyond_length_are_padding(model):
    out = tokens(model, [["a", "b", "c"]], [2])
    assert out["sequence_len"].numpy().tolist() == [2]
    assert not out["elmo"].numpy()[0, 2].any()
    reference = tokens(model, [["a", "b"]], [2])
    assert_same({k: out[k][:, :2] for k in LAYERS}, reference, atol=0)


def check_gap_is_padding(model):
    out = tokens(model, [["a", "", "b"]], [3])
    assert out["sequence_len"].numpy().tolist() == [2]
    assert not out["elmo"].numpy()[0, 1].any()
    reference = tokens(model, [["a", "b"]], [2])
    picked = {k: tf.gather(out[k], [0, 2], axis=1) for k in LAYERS}
    assert_same(picked, reference, atol=0)


def check_empty_batch_tokens(model):
    out = model.signatures["tokens"](
        tokens=tf.zeros([0, 3], tf.string),
        sequence_len=tf.zeros([0], tf.int32),
    )
    assert out["elmo"].shape == (0, 3, WIDTH)
    assert out["default"].shape == (0, WIDTH)


def check_no_steps(model):
    out = model.signatures["tokens"](
        tokens=tf.zeros([2, 0], tf.string),
        sequence_len=tf.constant([0, 3], tf.int32),
    )
    assert out["elmo"].shape == (2, 0, WIDTH)
    assert out["sequence_len"].numpy().tolist() == [0, 0]


def check_long_sentence_tokens(model):
    words = LONG.split()
    out = tokens(model, [words], [len(words)])
    assert out["elmo"].shape == (1, MAX_TOKENS, WIDTH)
    assert out["sequence_len"].numpy().tolist() == [MAX_TOKENS]
    assert_same(out, default(model, [LONG]))


def check_long_token_tokens(model):
    out = tokens(model, [["é" * 500, "y"]], [2])  # 1,000 bytes
    assert_same(out, tokens(model, [["é" * 24, "y"]], [2]), atol=0)


def check_invalid_utf8_and_nul_tokens(model):
    out = tokens(model, [[b"\xff", b"\x00\x00", b"\xe2\x82"]], [3])
    assert out["sequence_len"].numpy().tolist() == [3]
    assert_finite(out)


CASES = [
    ("default", "empty string", ("ok", check_empty_string)),
    ("default", "whitespace only", ("ok", check_whitespace_only)),
    ("default", "empty batch", ("ok", check_empty_batch_text)),
    ("default", "blank rows in a batch", ("ok", check_blank_rows_in_a_batch)),
    ("default", "5,000-token sentence", ("ok", check_long_sentence_text)),
    ("default", "1,000-byte token", ("ok", check_long_token_text)),
    ("default", "invalid UTF-8", ("ok", check_invalid_utf8_text)),
    ("default", "NUL bytes", ("ok", check_nul_bytes_text)),
    ("default", "unicode whitespace", ("ok", check_unicode_whitespace_text)),
    ("tokens", "all-padding row", ("ok", check_all_padding_row)),
    ("tokens", "sequence_len 0", ("ok", check_zero_length)),
    (
        "tokens",
        "sequence_len > T clamped",
        ("ok", check_length_beyond_steps_is_clamped),
    ),
    (
        "tokens",
        "tokens past sequence_len",
        ("ok", check_tokens_beyond_length_are_padding),
    ),
    ("tokens", "empty token inside", ("ok", check_gap_is_padding)),
    ("tokens", "empty batch", ("ok", check_empty_batch_tokens)),
    ("tokens", "zero steps", ("ok", check_no_steps)),
    ("tokens", "5,000-token sentence", ("ok", check_long_sentence_tokens)),
    ("tokens", "1,000-byte token", ("ok", check_long_token_tokens)),
    (
        "tokens",
        "invalid UTF-8 and NUL",
        ("ok", check_invalid_utf8_and_nul_tokens),
    ),
    (
        "tokens",
        "negative sequence_len",
        (
            "error",
            r"`sequence_len` must be >= 0",
            lambda m: tokens(m, [["a"], ["b"]], [1, -1]),
        ),
    ),
    (
        "tokens",
        "sequence_len of the wrong length",
        (
            "error",
            r"`sequence_len` must have one entry per row",
            lambda m: tokens(m, [["a"], ["b"]], [1]),
        ),
    ),
]


@pytest.mark.large
@pytest.mark.parametrize(
    "signature,case,outcome",
    CASES,
    ids=[f"{signature}: {case}" for signature, case, _ in CASES],
)
def test_bad_input(loaded, signature, case, outcome):
    if outcome[0] == "ok":
        outcome[1](loaded)
    else:
        _, message, call = outcome
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            call(loaded)
