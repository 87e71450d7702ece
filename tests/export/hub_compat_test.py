"""Loading the export the TF Hub ways: hub.load, hub.KerasLayer, TFSMLayer."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from tests.export.export_helpers import SENTENCES
from tests.export.export_helpers import keras_outputs
from tests.export.export_helpers import pad_tokens


@pytest.mark.large
def test_hub_load(bilm_export):
    import tensorflow_hub as hub

    bilm, path = bilm_export
    model = hub.load(path)
    out = model.signatures["default"](text=tf.constant(SENTENCES))
    expected = keras_outputs(bilm, SENTENCES)
    np.testing.assert_allclose(out["elmo"].numpy(), expected["elmo"], atol=1e-5)
    assert len(model.trainable_variables) == 2


@pytest.mark.large
def test_hub_keras_layer_in_a_tf_keras_model(bilm_export):
    import tensorflow_hub as hub
    import tf_keras

    bilm, path = bilm_export
    tokens = tf_keras.Input(shape=(None,), dtype=tf.string, name="tokens")
    lengths = tf_keras.Input(shape=(), dtype=tf.int32, name="sequence_len")
    elmo = hub.KerasLayer(
        path,
        signature="tokens",
        output_key="elmo",
        signature_outputs_as_dict=False,
    )({"tokens": tokens, "sequence_len": lengths})
    tags = tf_keras.layers.Dense(3, name="tags")(elmo)
    model = tf_keras.Model({"tokens": tokens, "sequence_len": lengths}, tags)
    padded, real = pad_tokens(SENTENCES)
    out = model({"tokens": padded, "sequence_len": real}).numpy()
    assert out.shape == (len(SENTENCES), padded.shape[1], 3)
    kernel, bias = model.get_layer("tags").get_weights()
    expected = keras_outputs(bilm, SENTENCES)["elmo"] @ kernel + bias
    np.testing.assert_allclose(out, expected, atol=1e-5)

    # Through `__call__` (no signature) the mix can be fine-tuned.
    text = tf_keras.Input(shape=(), dtype=tf.string)
    layer = hub.KerasLayer(path, trainable=True, output_key="default")
    pooled = layer(text)
    assert len(layer.trainable_weights) == 2
    classifier = tf_keras.Model(text, tf_keras.layers.Dense(1)(pooled))
    classifier.compile(optimizer="sgd", loss="mse")
    before = [w.numpy().copy() for w in layer.trainable_weights]
    classifier.fit(
        tf.constant(SENTENCES), np.ones((len(SENTENCES), 1)), verbose=0
    )
    after = [w.numpy() for w in layer.trainable_weights]
    assert any(not np.array_equal(a, b) for a, b in zip(before, after))


@pytest.mark.large
def test_keras3_tfsm_layer_feeds_a_downstream_model(bilm_export):
    bilm, path = bilm_export
    tokens = keras.Input(shape=(None,), dtype="string", name="tokens")
    lengths = keras.Input(shape=(), dtype="int32", name="sequence_len")
    outputs = keras.layers.TFSMLayer(path, call_endpoint="tokens")(
        {"tokens": tokens, "sequence_len": lengths}
    )
    tags = keras.layers.Dense(4, name="tags")(outputs["elmo"])
    model = keras.Model({"tokens": tokens, "sequence_len": lengths}, tags)
    padded, real = pad_tokens(SENTENCES)
    out = np.asarray(model({"tokens": padded, "sequence_len": real}))
    kernel, bias = model.get_layer("tags").get_weights()
    expected = keras_outputs(bilm, SENTENCES)["elmo"] @ kernel + bias
    np.testing.assert_allclose(out, expected, atol=1e-5)
    # The `default` endpoint takes raw sentences.
    text = keras.layers.TFSMLayer(path, call_endpoint="default")(
        tf.constant(SENTENCES)
    )
    expected = keras_outputs(bilm, SENTENCES)
    mean = expected["elmo"].sum(1) / expected["sequence_len"][:, None]
    np.testing.assert_allclose(np.asarray(text["default"]), mean, atol=1e-5)
