"""The committed savedmodel/elmo_small_en/1 is the shipped preset's export."""

import os

import numpy as np
import tensorflow as tf

import keras_elmo
from tests.export.export_helpers import SENTENCES
from tests.export.export_helpers import keras_outputs
from tests.export.export_helpers import pad_tokens

SHIPPED = os.path.join(
    os.path.dirname(__file__), "..", "..", "savedmodel", "elmo_small_en", "1"
)


def test_shipped_savedmodel_equals_from_preset():
    expected = keras_outputs(
        keras_elmo.BiLM.from_preset("elmo_small_en"), SENTENCES
    )
    loaded = tf.saved_model.load(SHIPPED)
    tokens, lengths = pad_tokens(SENTENCES)
    by_tokens = loaded.signatures["tokens"](tokens=tokens, sequence_len=lengths)
    by_text = loaded.signatures["default"](text=tf.constant(SENTENCES))
    for outputs in (by_tokens, by_text):
        for key in ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo"):
            got = outputs[key].numpy()
            scale = np.abs(expected[key]).max()
            np.testing.assert_allclose(
                got, expected[key], rtol=0, atol=1e-5 * scale, err_msg=key
            )
        np.testing.assert_array_equal(
            outputs["sequence_len"].numpy(), expected["sequence_len"]
        )


def test_shipped_savedmodel_freezes_the_bilm():
    """Only the mix is saved trainable (tests/export/frozen_variables_test.py
    checks what that gives downstream)."""
    loaded = tf.saved_model.load(SHIPPED)
    flagged = sorted(v.name for v in loaded.variables if v.trainable)
    assert flagged == ["elmo_mix/gamma:0", "elmo_mix/scalar_parameters:0"]
