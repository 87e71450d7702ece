"""The PyTorch checks beyond `backend_outputs.py`, written to `.npz`.

Run by `torch_parity_test.py` in a subprocess with `KERAS_BACKEND=torch`
(the backend is fixed when keras is imported). It saves everything
`backend_outputs.main` saves (every layer on the AllenNLP fixtures, the
stateful batches, a 3-epoch `fit` with dropout 0.5) and, for `tiny`:

- `tiny/fit_losses_no_dropout` [5]: the same downstream model with
  `dropout=0.0` fitted 5 epochs (a deterministic loss, so it must fall
  every epoch);
- `tiny/fit_trainable_losses` [3]: `trainable_bilm=True`, `dropout=0.0`,
  Adam(1e-3), fitted 3 epochs;
- `tiny/grad/<variable path>`: `d loss / d w` for every trainable weight
  of `ElmoLayer(trainable_bilm=True, dropout=0.0)` with the fixed
  linear loss `sum(elmo(ids) * probe)` (`probe` from `gradient_probe`),
  by torch autograd (the test takes TensorFlow's with a GradientTape);
- `tiny/tf_keras_outputs`: a `.keras` model saved under TensorFlow (by
  the test) loaded here and called on the fixture's ids;
- `tiny/torch_keras_outputs`, `tiny/torch_keras_reloaded`: the same
  kind of model built here, saved to `.keras` (the test loads that file
  under TensorFlow) and loaded back here.

Usage:

    KERAS_BACKEND=torch python tests/backends/torch_outputs.py OUT.npz \
        TF_MODEL.keras TORCH_MODEL.keras \
        tiny=/tmp/tiny_options.json,/tmp/tiny_weights.hdf5 ...
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_elmo  # noqa: E402
from tests.backends import backend_outputs  # noqa: E402
from tests.backends.backend_outputs import to_numpy  # noqa: E402
from tests.reference_data import load_fixture  # noqa: E402
from tests.reference_data import sentences_of  # noqa: E402


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
    compiled with Adam(learning_rate) and a from-logits cross-entropy."""
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


def gradient_probe(shape):
    """The fixed `[B, T, 2P]` weights of the linear gradient loss."""
    rng = np.random.default_rng(7)
    return rng.standard_normal(shape).astype("float32")


def fit_outputs(name, options, weights):
    ids, labels = fixture_ids_and_labels(name)
    out = {}
    for key, kwargs, epochs in (
        ("fit_losses_no_dropout", {"dropout": 0.0}, 5),
        (
            "fit_trainable_losses",
            {"trainable_bilm": True, "dropout": 0.0, "learning_rate": 1e-3},
            3,
        ),
    ):
        model = downstream_model(options, weights, **kwargs)
        history = model.fit(
            ids, labels, epochs=epochs, batch_size=len(ids), verbose=0
        )
        out[f"{name}/{key}"] = np.array(history.history["loss"])
    return out


def gradient_outputs(name, options, weights):
    """`{name/grad/<path>: array}` by torch autograd."""
    import torch

    ids, _ = fixture_ids_and_labels(name)
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    elmo = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, trainable_bilm=True, name="elmo"
    )
    mixed = elmo(ids)
    probe = keras.ops.convert_to_tensor(gradient_probe(tuple(mixed.shape)))
    loss = keras.ops.sum(mixed * probe)
    variables = elmo.trainable_variables
    grads = torch.autograd.grad(loss, [v.value for v in variables])
    return {
        f"{name}/grad/{v.path}": to_numpy(g) for v, g in zip(variables, grads)
    }


def keras_file_outputs(name, options, weights, tf_path, torch_path):
    ids, _ = fixture_ids_and_labels(name)
    out = {}
    loaded = keras.saving.load_model(tf_path)
    out[f"{name}/tf_keras_outputs"] = to_numpy(loaded(ids))
    model = downstream_model(options, weights, dropout=0.0)
    out[f"{name}/torch_keras_outputs"] = to_numpy(model(ids))
    model.save(torch_path)
    reloaded = keras.saving.load_model(torch_path)
    out[f"{name}/torch_keras_reloaded"] = to_numpy(reloaded(ids))
    return out


def main(argv):
    path, tf_path, torch_path, specs = argv[0], argv[1], argv[2], argv[3:]
    base = path + ".base.npz"
    backend_outputs.main([base] + specs)
    results = dict(np.load(base, allow_pickle=False))
    for spec in specs:
        name, files = spec.split("=", 1)
        options, weights = files.split(",")
        if name == "tiny":
            results.update(fit_outputs(name, options, weights))
            results.update(gradient_outputs(name, options, weights))
            results.update(
                keras_file_outputs(name, options, weights, tf_path, torch_path)
            )
    np.savez(path, **results)


if __name__ == "__main__":
    main(sys.argv[1:])
