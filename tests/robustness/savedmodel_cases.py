"""Cases over the exported SavedModel's `default` and `tokens` signatures.

The 21 awkward inputs of `tests/export/bad_inputs_test.py` are reused as
they are (its check functions run here against this suite's export);
this module adds the 10,000-token sentence, mixed scripts and emoji
against the Keras model, and signature-binding errors.
"""

import re

import numpy as np
import tensorflow as tf

import tests.export.bad_inputs_test as export_cases
from keras_elmo.export.signatures import MAX_TOKENS
from tests.export.export_helpers import keras_outputs
from tests.export.export_helpers import pad_tokens
from tests.robustness.case_table import Case
from tests.robustness.case_table import error
from tests.robustness.case_table import number
from tests.robustness.case_table import ok

# What each reused check asserts, for CASES.md.
EXPLAINED = {
    "check_empty_string": "`[1, 0, 2P]`, zero mean, sequence_len 0",
    "check_whitespace_only": "no tokens: `[1, 0, 2P]`, sequence_len 0",
    "check_empty_batch_text": "`[0, 0, 2P]` outputs",
    "check_blank_rows_in_a_batch": "blank rows zero; the real row = it alone",
    "check_long_sentence_text": f"capped at MAX_TOKENS={MAX_TOKENS}; = the "
    "first 512 tokens alone",
    "check_long_token_text": "= the 48-byte token",
    "check_invalid_utf8_text": "raw bytes kept; = the `tokens` signature",
    "check_nul_bytes_text": "NUL is a byte; = the `tokens` signature",
    "check_unicode_whitespace_text": "split as `str.split()`",
    "check_all_padding_row": "zero row, sequence_len 0",
    "check_zero_length": "zero row, sequence_len 0",
    "check_length_beyond_steps_is_clamped": "clamped to T; = sequence_len T",
    "check_tokens_beyond_length_are_padding": "tokens past it are padding",
    "check_gap_is_padding": '`""` inside is padding; = without it',
    "check_empty_batch_tokens": "`[0, T, 2P]` outputs",
    "check_no_steps": "`[B, 0, 2P]`, sequence_len 0",
    "check_long_sentence_tokens": f"capped at {MAX_TOKENS}; = `default`",
    "check_long_token_tokens": "= the 48-byte token",
    "check_invalid_utf8_and_nul_tokens": "finite outputs, lengths kept",
}


def _reused(signature, name, outcome):
    surface = f"SavedModel `{signature}`"
    where = "tests/export/bad_inputs_test.py"
    if outcome[0] == "ok":
        check = outcome[1]
        expected = EXPLAINED.get(check.__name__, check.__name__)
        return Case(
            surface,
            name,
            f"correct: {expected} (`{where}::{check.__name__}`)",
            run=lambda fx: check(fx("saved_model")),
        )
    _, message, call = outcome
    return Case(
        surface,
        name,
        f"InvalidArgumentError matching `{message}` (`{where}`)",
        run=lambda fx: _expect_invalid_argument(call, message, fx),
    )


def _expect_invalid_argument(call, message, fx):
    try:
        call(fx("saved_model"))
    except tf.errors.InvalidArgumentError as e:
        assert re.search(message, e.message), e.message
        return
    raise AssertionError(f"no InvalidArgumentError matching {message!r}")


LONG = " ".join(f"w{i % 97}" for i in range(10_000))
MIXED = ["héllo 世界 🎉 مرحبا Привет", "👩‍👩‍👧 ǅ a\u0301 naïve"]


def long_sentence_default(fx):
    model = fx("saved_model")
    out = export_cases.default(model, [LONG, "a"])
    assert out["elmo"].shape == (2, MAX_TOKENS, 32)
    assert out["sequence_len"].numpy().tolist() == [MAX_TOKENS, 1]
    first = " ".join(LONG.split()[:MAX_TOKENS])
    export_cases.assert_same(
        {k: v[:1] for k, v in out.items()},
        export_cases.default(model, [first]),
    )


def mixed_scripts_match_keras(fx):
    """Both signatures equal the Keras BiLM (plain-average mix)."""
    model, bilm = fx("saved_model"), fx("tiny_bilm")
    expected = keras_outputs(bilm, MIXED)
    by_text = export_cases.default(model, MIXED)
    tokens, lengths = pad_tokens(MIXED)
    by_tokens = model.signatures["tokens"](tokens=tokens, sequence_len=lengths)
    for out in (by_text, by_tokens):
        export_cases.assert_same(out, expected, atol=1e-5)
        np.testing.assert_array_equal(
            out["sequence_len"], expected["sequence_len"]
        )


def python_list_text(fx):
    model = fx("saved_model")
    out = model.signatures["default"](text=["a b"])
    export_cases.assert_same(out, export_cases.default(model, ["a b"]), 0)


def text_rank_2(fx):
    fx("saved_model").signatures["default"](text=tf.constant([["a"], ["b"]]))


def tokens_rank_1(fx):
    fx("saved_model").signatures["tokens"](
        tokens=tf.constant(["a", "b", "c"]), sequence_len=tf.constant([1, 1, 1])
    )


def sequence_len_rank_2(fx):
    fx("saved_model").signatures["tokens"](
        tokens=tf.constant([["a"], ["b"]]), sequence_len=tf.constant([[1], [1]])
    )


def missing_input(fx):
    fx("saved_model").signatures["default"]()


CASES = number(
    "SM",
    [_reused(*row[:2], row[2]) for row in export_cases.CASES]
    + [
        ok(
            "SavedModel `default`",
            "10,000-token sentence next to a 1-token one",
            f"capped at MAX_TOKENS={MAX_TOKENS}; = the first 512 tokens alone",
            long_sentence_default,
        ),
        ok(
            "SavedModel `default`, `tokens`",
            "mixed scripts, combining marks, emoji, ZWJ sequences",
            "= the Keras BiLM on batch_to_ids (average mix)",
            mixed_scripts_match_keras,
        ),
        ok(
            "SavedModel `default`",
            "a Python list instead of a tensor",
            "= the tensor input",
            python_list_text,
        ),
        error(
            "SavedModel `default`",
            "`text` of rank 2 `[2, 1]`",
            tf.errors.InvalidArgumentError,
            ["tensor text", "expected shape [?]", "[2,1]"],
            text_rank_2,
        ),
        error(
            "SavedModel `tokens`",
            "`tokens` of rank 1 `[3]`",
            tf.errors.InvalidArgumentError,
            ["tensor tokens", "expected shape [?,?]", "[3]"],
            tokens_rank_1,
        ),
        error(
            "SavedModel `tokens`",
            "`sequence_len` of rank 2 `[2, 1]`",
            tf.errors.InvalidArgumentError,
            ["tensor sequence_len", "expected shape [?]", "[2,1]"],
            sequence_len_rank_2,
        ),
        error(
            "SavedModel `default`",
            "no `text` input",
            TypeError,
            ["missing a required argument: 'text'", "dtype=tf.string"],
            missing_input,
        ),
    ],
)
