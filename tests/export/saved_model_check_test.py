"""A SavedModel source that keras_elmo's export did not write is refused
before it is loaded, unless the caller trusts it; our exports load."""

import os

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.export import signatures as sig

SHIPPED = os.path.join(
    os.path.dirname(__file__), "..", "..", "savedmodel", "elmo_small_en", "1"
)


class _Reader(tf.Module):
    """A `tokens` signature as the Embedder expects it, that also reads
    `secret` and writes `dropped` whenever it is called."""

    def __init__(self, secret, dropped):
        super().__init__()
        self.secret, self.dropped = secret, dropped

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, None], tf.string),
            tf.TensorSpec([None], tf.int32),
        ]
    )
    def tokens(self, tokens, sequence_len):
        data = tf.io.read_file(self.secret)
        tf.io.write_file(self.dropped, data)
        shape = tf.shape(tokens)
        value = tf.cast(tf.strings.length(data), tf.float32)
        emb = tf.fill([shape[0], shape[1], 2], value)
        both = tf.concat([emb, emb], -1)
        return {
            sig.WORD_EMB: emb,
            "lstm_outputs1": both,
            sig.SEQUENCE_LEN: sequence_len,
        }


class _Saver(tf.Module):
    """A signature that writes a checkpoint (`SaveV2`) where it pleases."""

    @tf.function(input_signature=[tf.TensorSpec([], tf.string)])
    def tokens(self, prefix):
        tf.raw_ops.SaveV2(
            prefix=prefix,
            tensor_names=["x"],
            shape_and_slices=[""],
            tensors=[tf.constant([1.0])],
        )
        return {"done": tf.constant(1)}


@pytest.fixture
def reader(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret")
    dropped = tmp_path / "dropped.txt"
    module = _Reader(str(secret), str(dropped))
    path = str(tmp_path / "reader")
    tf.saved_model.save(module, path, signatures={"tokens": module.tokens})
    return path, dropped


def test_a_saved_model_that_reads_and_writes_files_is_refused(reader):
    path, dropped = reader
    with pytest.raises(ValueError) as e:
        keras_elmo.Embedder.from_preset(path)
    assert type(e.value).__name__ == "UntrustedSavedModelError"
    message = str(e.value)
    assert message.startswith(
        f"SavedModel {path!r} was not written by keras_elmo's export: it "
        "holds ops outside those exports' allow-list: ReadFile (in function "
    )
    assert "; WriteFile (in function " in message
    assert message.endswith("pass `trust_saved_model=True`.")
    assert e.value.ops == ["ReadFile", "WriteFile"]
    assert e.value.argument == "trust_saved_model"
    assert not dropped.exists()
    # Trusted explicitly, it loads and runs as the program it is.
    embedder = keras_elmo.Embedder.from_preset(path, trust_saved_model=True)
    (vectors,) = embedder.embed([["a", "b"]])
    np.testing.assert_array_equal(vectors[0], np.full((2, 4), 10.0))
    assert dropped.read_text() == "the secret"


def test_cli_embed_names_the_trust_flag(reader, tmp_path, capsys):
    path, dropped = reader
    corpus = tmp_path / "in.txt"
    corpus.write_text("a b\n")
    out = str(tmp_path / "out.hdf5")
    assert main(["embed", str(corpus), out, "--model", path]) == 2
    err = capsys.readouterr().err
    assert "ReadFile" in err and "WriteFile" in err
    assert "pass --trust-saved-model" in err
    assert not dropped.exists() and not os.path.exists(out)
    argv = ["embed", str(corpus), out, "--model", path, "--trust-saved-model"]
    assert main(argv) == 0
    assert dropped.read_text() == "the secret" and os.path.exists(out)


def test_checkpoint_ops_outside_the_restore_path_are_refused(tmp_path):
    from keras_elmo.export.saved_model import UntrustedSavedModelError
    from keras_elmo.export.saved_model import check_saved_model

    module = _Saver()
    path = str(tmp_path / "saver")
    tf.saved_model.save(module, path, signatures={"tokens": module.tokens})
    with pytest.raises(UntrustedSavedModelError) as e:
        check_saved_model(path)
    assert e.value.ops == ["SaveV2"]
    check_saved_model(path, trust_saved_model=True)


def test_our_exports_pass_and_load(bilm_export, elmo_layer_export, tmp_path):
    from keras_elmo.export.saved_model import read_proto
    from keras_elmo.export.saved_model import refused_ops

    bilm, path = bilm_export
    cached = keras_elmo.export_saved_model(
        bilm, str(tmp_path / "cached"), vocabulary=["The", "bank", "."]
    )
    for export in (path, elmo_layer_export[1], cached, SHIPPED):
        assert refused_ops(read_proto(export)) == {}, export
    # The standard save / restore functions hold checkpoint ops.
    proto = read_proto(path)
    ops = {
        n.op
        for f in proto.meta_graphs[0].graph_def.library.function
        for n in f.node_def
    }
    assert {"SaveV2", "RestoreV2"} <= ops
    embedder = keras_elmo.Embedder.from_preset(path)
    want = keras_elmo.Embedder(bilm).embed([["The", "bank"]])
    got = embedder.embed([["The", "bank"]])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
