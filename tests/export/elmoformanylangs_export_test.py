"""A converted ELMoForManyLangs model everywhere a bilm-tf one goes:
`keras-elmo convert --from-elmoformanylangs`, `keras-elmo export` (the
SavedModel's `tokens` / `default` signatures in a process that imports
only TensorFlow), `ElmoLayer` on string tokens in a downstream model."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.cli.main import main
from tests import efml_reference as ref

CLEAN = r"""
import json, sys
import numpy as np
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
tokens = json.loads(sys.argv[2])
text = json.loads(sys.argv[3])
steps = max(len(t) for t in tokens)
out = model.signatures["tokens"](
    tokens=tf.constant([t + [""] * (steps - len(t)) for t in tokens]),
    sequence_len=tf.constant([len(t) for t in tokens], tf.int32))
arrays = {"tokens." + k: v.numpy() for k, v in out.items()}
out = model.signatures["default"](text=tf.constant(text))
arrays.update({"default." + k: v.numpy() for k, v in out.items()})
np.savez(sys.argv[4], **arrays)
print(json.dumps(sorted(m for m in sys.modules
                        if m.split(".")[0] == "keras_elmo")))
"""


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """`{model: native folder}` written by the CLI."""
    base = tmp_path_factory.mktemp("efml_converted")
    folders = {}
    for model in ref.MODELS:
        out = str(base / model)
        args = ["convert", "--from-elmoformanylangs"]
        assert main(args + [ref.folder(model, "legacy"), "--out", out]) == 0
        folders[model] = out
    return folders


def test_convert_refuses_to_overwrite_without_force(converted, capsys):
    args = ["convert", "--from-elmoformanylangs", ref.folder("char")]
    assert main(args + ["--out", converted["char"]]) == 2
    assert "not empty; pass --force" in capsys.readouterr().err
    assert main(args + ["--out", converted["char"], "--force"]) == 0


@pytest.mark.large
@pytest.mark.parametrize("model", ref.MODELS)
def test_saved_model_signatures_equal_sents2elmo(converted, model, tmp_path):
    saved = str(tmp_path / "saved")
    args = ["export", "--model", converted[model], "--out", saved]
    assert main(args) == 0
    sentences, layers, average = ref.reference(model)
    # `default` splits on whitespace: leave out the sentence whose tokens
    # hold U+3000 / U+00A0.
    texts = [
        i for i, s in enumerate(sentences) if all(t.split() == [t] for t in s)
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    npz = str(tmp_path / "out.npz")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            CLEAN,
            saved,
            json.dumps(sentences),
            json.dumps([" ".join(sentences[i]) for i in texts]),
            npz,
        ],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    out = dict(np.load(npz))
    for prefix, rows in (("tokens", range(len(sentences))), ("default", texts)):
        for row, i in enumerate(rows):
            n = len(sentences[i])
            assert out[f"{prefix}.sequence_len"][row] == n
            got = {
                k: out[f"{prefix}.{k}"][row, :n]
                for k in ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo")
            }
            ref.assert_relative(got["word_emb"], layers[i][0, :, :8])
            ref.assert_relative(got["lstm_outputs1"], layers[i][1])
            ref.assert_relative(got["lstm_outputs2"], layers[i][2])
            # The exported mix starts as the plain layer average: -1.
            ref.assert_relative(got["elmo"], average[i])
            ref.assert_relative(
                out[f"{prefix}.default"][row], average[i].mean(axis=0)
            )


def test_elmo_layer_on_string_tokens_in_a_downstream_model(converted):
    bilm = keras_elmo.BiLM.from_preset(converted["word"])
    tokens = keras.Input(shape=(None,), dtype="string")
    elmo = keras_elmo.ElmoLayer(
        bilm, dropout=0.0, scalar_mix_parameters=[0.0, 0.0, 0.0]
    )
    mixed = elmo(tokens)
    tags = keras.layers.Dense(3, name="tags")(mixed)
    model = keras.Model(tokens, {"elmo": mixed, "tags": tags})
    sentences, _, average = ref.reference("word")
    out = model(ref.padded(sentences))
    for i, s in enumerate(sentences):
        ref.assert_relative(np.asarray(out["elmo"])[i, : len(s)], average[i])
    # It trains (the mix and the head; the biLM is frozen) ...
    model.compile(optimizer="sgd", loss={"tags": "mse"})
    x = ref.padded(sentences[:4])
    y = np.zeros((4, x.shape[1], 3), "float32")
    before = [w.numpy().copy() for w in bilm.weights]
    model.fit(x, {"tags": y}, epochs=1, verbose=0)
    for a, w in zip(before, bilm.weights):
        np.testing.assert_array_equal(a, w.numpy())


def test_elmo_layer_from_preset_takes_the_converted_folder(converted):
    layer = keras_elmo.ElmoLayer.from_preset(converted["char"], dropout=0.0)
    sentences, _, _ = ref.reference("char")
    out = layer(ref.padded(sentences))
    assert tuple(out.shape) == (len(sentences), 13, 16)
    assert layer.compute_mask(ref.padded(sentences)).numpy().sum() == sum(
        len(s) for s in sentences
    )
    assert tf.reduce_all(tf.equal(out[7, 1:], 0.0))


@pytest.mark.parametrize("model", ref.MODELS)
@pytest.mark.parametrize("source", ["package folder", "converted"])
def test_elmo_layer_from_preset_downstream_equals_the_average(
    converted, model, source
):
    """`ElmoLayer.from_preset` on the folder the real package wrote, and
    on its conversion, inside a downstream model: the equal-weight mix is
    `sents2elmo(output_layer=-1)` (the average of the three layers)."""
    path = ref.folder(model, "legacy") if source != "converted" else None
    layer = keras_elmo.ElmoLayer.from_preset(
        path or converted[model],
        dropout=0.0,
        scalar_mix_parameters=[0.0, 0.0, 0.0],
    )
    tokens = keras.Input(shape=(None,), dtype="string")
    mixed = layer(tokens)
    head = keras.layers.Dense(2, name="head")(mixed)
    downstream = keras.Model(tokens, {"elmo": mixed, "head": head})
    sentences, _, average = ref.reference(model)
    out = downstream(ref.padded(sentences))
    assert tuple(out["head"].shape)[:2] == tuple(out["elmo"].shape)[:2]
    for i, s in enumerate(sentences):
        ref.assert_relative(np.asarray(out["elmo"])[i, : len(s)], average[i])
