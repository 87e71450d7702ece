"""The signature contract constants: names, specs, output keys, limits."""

import tensorflow as tf

from keras_elmo.export import signatures as sig


def test_names_follow_tf_hub_elmo3():
    assert sig.SIGNATURE_NAMES == ("default", "tokens", "serving_default")
    assert (sig.TEXT, sig.TOKENS, sig.SEQUENCE_LEN) == (
        "text",
        "tokens",
        "sequence_len",
    )
    assert sig.output_keys() == [
        "word_emb",
        "lstm_outputs1",
        "lstm_outputs2",
        "elmo",
        "default",
        "sequence_len",
    ]
    assert sig.output_keys(3)[1:4] == [
        "lstm_outputs1",
        "lstm_outputs2",
        "lstm_outputs3",
    ]


def test_specs_and_limits():
    assert sig.text_spec() == tf.TensorSpec([None], tf.string, name="text")
    tokens, lengths = sig.tokens_specs()
    assert tokens == tf.TensorSpec([None, None], tf.string, name="tokens")
    assert lengths == tf.TensorSpec([None], tf.int32, name="sequence_len")
    assert set(sig.tokens_input_spec()) == {"tokens", "sequence_len"}
    specs = sig.output_specs(projection_dim=16)
    assert specs["word_emb"].shape.as_list() == [None, None, 16]
    assert specs["elmo"].shape.as_list() == [None, None, 32]
    assert specs["default"].shape.as_list() == [None, 32]
    assert specs["sequence_len"].dtype == tf.int32
    assert sig.MAX_TOKENS == 512
    assert sig.MAX_TOKEN_BYTES == 48
