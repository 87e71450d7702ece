"""Writes every layer's outputs under the active Keras backend to `.npz`.

Run by `model_outputs.main` (`jax_outputs.py`, `torch_outputs.py`) in
a subprocess with `KERAS_BACKEND=jax` or `torch` (the backend is fixed
when keras is imported, so the TensorFlow suite cannot switch
in-process). For each AllenNLP reference config named on
the command line (`name=options.json,weights.hdf5`) it builds
`BiLM.from_allennlp`, runs the committed fixture's sentences and saves:
the BiLM's three layers and mask, `ElmoLayer`'s scalar mix with the
fixture's mix parameters, and the sublayers on their own
(`CharCNNEmbedding`, `Highway`, `ResidualBiLSTM` on a seeded input,
`ScalarMix` on seeded layers), plus `batch_to_ids`, and `CharacterIds`
and `ElmoLayer` on NumPy strings. The test compares them with AllenNLP
and with the same layers run on TensorFlow. For `tiny` also a stateful
BiLM on the `tiny_stateful` batches and the losses of a short
`model.fit` with `ElmoLayer`. Usage:

    KERAS_BACKEND=jax python tests/backends/backend_outputs.py OUT.npz \
        tiny=/tmp/tiny_options.json,/tmp/tiny_weights.hdf5 ...
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_elmo  # noqa: E402
from tests.reference_data import load_fixture  # noqa: E402
from tests.reference_data import sentences_of  # noqa: E402


def to_numpy(value):
    """A backend tensor as a NumPy array (torch: detached from autograd)."""
    return keras.ops.convert_to_numpy(value)


def fixture_ids_and_labels(name):
    """`(ids [B, T, 50], labels [B, T])`: the fixture's sentences, each
    token labelled with the parity of its length."""
    sentences = sentences_of(load_fixture(name))
    ids = keras_elmo.batch_to_ids(sentences)
    labels = np.zeros(ids.shape[:2], "int32")
    for b, sentence in enumerate(sentences):
        labels[b, : len(sentence)] = [len(t) % 2 for t in sentence]
    return ids, labels


def downstream_model(options, weights, learning_rate=0.01, **elmo_kwargs):
    """char ids `[B, T, 50]` -> `ElmoLayer(**elmo_kwargs)` -> Dense(2),
    compiled with Adam(learning_rate) and a from-logits cross-entropy,
    after `keras.utils.set_random_seed(0)`."""
    keras.utils.set_random_seed(0)
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    inputs = keras.Input((None, 50), dtype="int32")
    mixed = keras_elmo.layers.ElmoLayer(bilm, **elmo_kwargs)(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2)(mixed))
    model.compile(
        keras.optimizers.Adam(learning_rate),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def seeded_inputs(name, batch, steps, width):
    """The sublayer inputs both backends use: `[B, T, width]` float32 and
    a right-padded mask with lengths `steps, steps - 1, ...`."""
    rng = np.random.default_rng(len(name))
    values = rng.standard_normal((batch, steps, width)).astype("float32")
    lengths = np.maximum(steps - np.arange(batch), 1)
    mask = np.arange(steps)[None, :] < lengths[:, None]
    return values, mask


def sublayer_outputs(name, bilm, ids):
    """`{name/layer: array}` of `bilm`'s sublayers run on their own:
    `CharCNNEmbedding` and `Highway` on `ids`, `ResidualBiLSTM` on a
    seeded `[B, T + 2, P]` input with a ragged mask, and a `ScalarMix`
    with layer norm and set weights on seeded layers."""
    out = {}
    char_cnn = to_numpy(bilm.char_cnn(ids))
    out[f"{name}/char_cnn"] = char_cnn
    out[f"{name}/highway"] = to_numpy(bilm.highway(char_cnn))
    width = bilm.bilstm.projection_dim
    values, mask = seeded_inputs(name, len(ids), ids.shape[1] + 2, width)
    for layer, output in enumerate(bilm.bilstm(values, mask=mask)):
        out[f"{name}/bilstm{layer}"] = to_numpy(output)
    layers = [values[..., :4] * (k + 1) for k in range(3)]
    mix = keras_elmo.layers.ScalarMix(3, do_layer_norm=True)
    mix.build([v.shape for v in layers])
    mix.set_weights(
        [np.array([0.5, -1.0, 2.0], "float32"), np.array(0.7, "float32")]
    )
    out[f"{name}/scalar_mix"] = to_numpy(mix(layers, mask=mask))
    return out


def outputs_of(name, options, weights):
    ref = load_fixture(name)
    sentences = sentences_of(ref)
    ids = keras_elmo.batch_to_ids(sentences)
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    out = {f"{name}/ids": ids}
    for key, value in bilm(ids).items():
        out[f"{name}/{key}"] = to_numpy(value)
    elmo = keras_elmo.layers.ElmoLayer(
        bilm,
        dropout=0.0,
        scalar_mix_parameters=ref["scalar_mix_parameters"].tolist(),
    )
    out[f"{name}/elmo"] = to_numpy(elmo(ids))
    steps = max(len(s) for s in sentences)
    rows = [list(s) + [""] * (steps - len(s)) for s in sentences]
    strings = np.array(rows, dtype=str)
    out[f"{name}/character_ids"] = to_numpy(
        keras_elmo.layers.CharacterIds()(strings)
    )
    out[f"{name}/elmo_strings"] = to_numpy(elmo(strings))
    out.update(sublayer_outputs(name, bilm, ids))
    return out


def stateful_outputs(name, options, weights):
    """`{name_stateful/batchK: [B, 3, T, 2P]}`: a stateful BiLM's layers
    on the committed `{name}_stateful` fixture's batches, in order."""
    ref = load_fixture(f"{name}_stateful")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights, stateful=True)
    out = {}
    for k in range(int(ref["num_batches"])):
        outputs = bilm(ref[f"batch{k}_char_ids"])
        word = to_numpy(outputs["word_emb"])
        out[f"{name}_stateful/batch{k}"] = np.stack(
            [
                np.concatenate([word, word], axis=-1),
                to_numpy(outputs["lstm_outputs1"]),
                to_numpy(outputs["lstm_outputs2"]),
            ],
            axis=1,
        )
    return out


def fit_losses(name, options, weights):
    """`{name/fit_losses: [3]}`: a frozen-biLM `ElmoLayer` (dropout 0.5)
    under a Dense head fitted 3 epochs (`model.fit`, jit-compiled on
    JAX) on the fixture's sentences (`fixture_ids_and_labels`)."""
    ids, labels = fixture_ids_and_labels(name)
    model = downstream_model(options, weights)
    history = model.fit(ids, labels, epochs=3, batch_size=len(ids), verbose=0)
    return {f"{name}/fit_losses": np.array(history.history["loss"])}


def main(argv):
    path, specs = argv[0], argv[1:]
    results = {"backend": np.array(keras.config.backend())}
    for spec in specs:
        name, files = spec.split("=", 1)
        options, weights = files.split(",")
        results.update(outputs_of(name, options, weights))
        if name == "tiny":
            results.update(stateful_outputs(name, options, weights))
            results.update(fit_losses(name, options, weights))
    np.savez(path, **results)


if __name__ == "__main__":
    main(sys.argv[1:])
