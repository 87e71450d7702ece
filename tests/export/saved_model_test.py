"""`export_saved_model`: outputs, mix variables, atomic writes, errors."""

import os
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.export import signatures as sig
from keras_elmo.export.elmo_module import build_module
from keras_elmo.export.saved_model import _check_destination
from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.utils import atomic
from keras_elmo.utils.atomic import atomic_directory
from tests.conftest import tiny_bilm
from tests.export.export_helpers import SEED
from tests.export.export_helpers import SENTENCES
from tests.export.export_helpers import keras_outputs
from tests.export.export_helpers import pad_tokens


@pytest.mark.large
def test_both_signatures_match_the_keras_bilm(bilm_export, loaded):
    bilm, _ = bilm_export
    expected = keras_outputs(bilm, SENTENCES)
    tokens, lengths = pad_tokens(SENTENCES)
    by_text = loaded.signatures["default"](text=tf.constant(SENTENCES))
    by_tokens = loaded.signatures["tokens"](tokens=tokens, sequence_len=lengths)
    serving = loaded.signatures["serving_default"](text=tf.constant(SENTENCES))
    real = expected["sequence_len"]
    mean = expected["elmo"].sum(1) / real[:, None]
    for out in (by_text, by_tokens, serving):
        assert sorted(out) == sorted(sig.output_keys())
        for key in ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo"):
            np.testing.assert_allclose(
                out[key].numpy(), expected[key], atol=1e-5, err_msg=key
            )
        np.testing.assert_allclose(out["default"].numpy(), mean, atol=1e-5)
        np.testing.assert_array_equal(out["sequence_len"].numpy(), real)
        assert out["sequence_len"].dtype == tf.int32


@pytest.mark.large
def test_elmo_layer_export_uses_its_mix(elmo_layer_export):
    layer, path = elmo_layer_export
    model = tf.saved_model.load(path)
    tokens = [s.split() for s in SENTENCES]
    expected = np.asarray(layer(keras_elmo.batch_to_ids(tokens)))
    out = model.signatures["default"](text=tf.constant(SENTENCES))
    np.testing.assert_allclose(out["elmo"].numpy(), expected, atol=1e-5)
    values = {v.name.split("/")[-1]: v.numpy() for v in model.variables}
    np.testing.assert_allclose(values["scalar_parameters:0"], [0.5, -0.25, 1.0])
    assert values["gamma:0"] == pytest.approx(1.75)


@pytest.mark.large
def test_mix_weights_are_the_trainable_variables(loaded):
    names = sorted(v.name for v in loaded.trainable_variables)
    assert names == ["elmo_mix/gamma:0", "elmo_mix/scalar_parameters:0"]
    s, gamma = sorted(loaded.trainable_variables, key=lambda v: v.name)[::-1]
    np.testing.assert_array_equal(s.numpy(), np.zeros(3, np.float32))
    assert float(gamma.numpy()) == 1.0
    assert len(loaded.variables) > len(loaded.trainable_variables)
    assert loaded.regularization_losses == []
    # Gradients reach the mix (and stop at the frozen biLM).
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(loaded(tf.constant(["a b c"]))["elmo"] ** 2)
    grads = tape.gradient(loss, loaded.trainable_variables)
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in grads)


@pytest.mark.large
def test_callable_attributes_equal_the_signatures(loaded):
    text = tf.constant(SENTENCES[:3])
    by_signature = loaded.signatures["default"](text=text)
    tokens, lengths = pad_tokens(SENTENCES[:3])
    for out in (
        loaded(text),
        loaded.default(text),
    ):
        np.testing.assert_array_equal(
            out["elmo"].numpy(), by_signature["elmo"].numpy()
        )
    out = loaded.tokens({"tokens": tokens, "sequence_len": lengths})
    np.testing.assert_allclose(
        out["elmo"].numpy(), by_signature["elmo"].numpy(), atol=1e-6
    )


def test_export_refuses_to_replace_what_it_should_not(tmp_path):
    bilm = tiny_bilm(SEED)
    other = tmp_path / "not_a_model"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a SavedModel"):
        export_saved_model(bilm, str(other))
    assert (other / "notes.txt").read_text() == "keep me"
    fake = tmp_path / "model"
    fake.mkdir()
    (fake / "saved_model.pb").write_bytes(b"old")
    with pytest.raises(FileExistsError, match="pass `overwrite=True`"):
        export_saved_model(bilm, str(fake), overwrite=False)
    assert (fake / "saved_model.pb").read_bytes() == b"old"


def test_export_argument_errors():
    bilm = tiny_bilm(SEED)
    with pytest.raises(TypeError, match="keras_elmo.BiLM or a"):
        build_module("not a model")
    with pytest.raises(ValueError, match="max_tokens"):
        build_module(bilm, max_tokens=0)
    stateful = keras_elmo.BiLM(bilm.config, stateful=True)
    with pytest.raises(ValueError, match="stateful"):
        build_module(stateful)


def test_exchange_paths_swaps_two_directories(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "f").write_text("A")
    (b / "f").write_text("B")
    assert atomic.exchange_paths(str(a), str(b))  # Linux, as in CI
    assert (a / "f").read_text() == "B"
    assert (b / "f").read_text() == "A"
    with pytest.raises(FileNotFoundError):
        atomic.exchange_paths(str(a), str(tmp_path / "missing"))


@pytest.mark.parametrize("exchange", [True, False])
def test_directory_is_replaced_atomically_and_no_temp_is_left(
    tmp_path, monkeypatch, exchange
):
    if not exchange:  # the two-rename fallback
        monkeypatch.setattr(atomic, "exchange_paths", lambda a, b: False)
    path = tmp_path / "elmo"
    path.mkdir()  # an empty directory is a fine destination
    _check_destination(str(path), overwrite=False)
    for version in ("old", "new"):
        with atomic_directory(str(path)) as tmp:
            assert os.path.dirname(tmp) == str(tmp_path)  # beside `path`
            (Path(tmp) / "saved_model.pb").write_text(version)
    assert (path / "saved_model.pb").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["elmo"]
    with pytest.raises(RuntimeError):
        with atomic_directory(str(path)) as tmp:
            (Path(tmp) / "saved_model.pb").write_text("half")
            raise RuntimeError("export failed")
    assert (path / "saved_model.pb").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["elmo"]


def test_max_tokens_truncates():
    module = build_module(tiny_bilm(SEED), max_tokens=4)
    out = module(tf.constant(["a b c d e f", "x"]))
    assert out["elmo"].shape == (2, 4, 32)
    assert out["sequence_len"].numpy().tolist() == [4, 1]
