"""The code of docs/MIGRATION.md's TF Hub table runs and gives TF Hub's
outputs (the rows are read from the page, not copied here)."""

import os
import re

import numpy as np
import tensorflow as tf

import keras_elmo
from tests.models.tfhub_checkpoint_test import module  # noqa: F401

PAGE = os.path.join(
    os.path.dirname(__file__), "..", "..", "docs", "MIGRATION.md"
)


def row_code(first_cell):
    """The code spans of the keras_elmo column of the row whose first
    cell starts with `first_cell`, one statement a line."""
    with open(PAGE, encoding="utf-8") as f:
        rows = [line for line in f if line.startswith("| " + first_cell)]
    assert len(rows) == 1, first_cell
    right = rows[0].split(" | ", 1)[1]
    right = right.split(" (", 1)[0]  # the explanation after the code
    spans = re.findall(r"`([^`]+)`", right)
    return "\n".join(spans)


def _tokens():
    # A tf.string tensor, as TF Hub users hold; the last row is padding.
    return tf.constant(
        [["The", "cat", "sat", "."], ["Dogs", "bark", "", ""], [""] * 4]
    )


def _run(code, folder, **names):
    scope = {"keras_elmo": keras_elmo, "tf": tf, **names}
    exec(code.replace('"elmo_3/"', repr(str(folder))), scope)
    return scope


def test_word_emb_row_takes_a_string_tensor(module):  # noqa: F811
    folder = module[0]
    tokens = _tokens()
    scope = _run(row_code('`out["word_emb"]`'), folder, tokens=tokens)
    ids = keras_elmo.batch_to_ids(
        [["The", "cat", "sat", "."], ["Dogs", "bark"], []]
    )
    expected = scope["bilm"](ids)
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        got = np.asarray(scope["out"][key])
        want = np.asarray(expected[key])
        np.testing.assert_allclose(got[:, : want.shape[1]], want, atol=1e-6)


def test_default_row_is_the_masked_mean_with_zeros_for_padding(module):  # noqa: F811
    folder = module[0]
    tokens = _tokens()
    elmo = keras_elmo.layers.ElmoLayer.from_tfhub(str(folder), dropout=0.0)
    vectors = elmo(tokens)
    scope = _run(
        row_code('`out["default"]`'), folder, tokens=tokens, vectors=vectors
    )
    got = np.asarray(scope["default"])
    values = np.asarray(vectors)
    np.testing.assert_allclose(got[0], values[0, :4].mean(0), atol=1e-6)
    np.testing.assert_allclose(got[1], values[1, :2].mean(0), atol=1e-6)
    np.testing.assert_array_equal(got[2], np.zeros(values.shape[-1]))
