"""The model-level outputs every non-TensorFlow backend writes to `.npz`.

Run inside the `KERAS_BACKEND=jax` / `torch` subprocess
(`jax_outputs.py`, `torch_outputs.py`, which pass their backend's
gradient function to `main`). `main` saves everything
`backend_outputs.main` saves (every layer on the AllenNLP fixtures, the
stateful batches, a 3-epoch `fit` with dropout 0.5) and:

- `preset/layers` [B, 3, T, 2P], `preset/mask`: `BiLM.from_preset(
  "elmo_small_en")` (the shipped model) on the `tiny` fixture's
  sentences; that model's `save_allennlp` into `WORK/<backend>_preset/`;
  `preset/lm/forward`, `preset/lm/backward` [sum n, V]: its language
  model's log-probabilities of `LM_SENTENCES` (`LMSubstitutes`);
- for `tiny`, `tiny/fit_losses_no_dropout` [5]: a downstream model with
  `dropout=0.0` fitted 5 epochs (a deterministic loss, so it must fall
  every epoch); `tiny/fit_trainable_losses` [3]: `trainable_bilm=True`,
  `dropout=0.0`, Adam(1e-3), 3 epochs; that fine-tuned biLM's
  `save_allennlp` into `WORK/<backend>_tuned/`, with its layers on the
  fixture (`tiny/tuned/layers`) and every weight (`tiny/tuned/weightNNN`,
  `bilm.weights` order; `tiny/tuned/paths` their paths); the same files
  loaded by `from_preset` of their `file://` URL (`tiny/tuned/url_layers`);
- `tiny/grad/<variable path>`: `d loss / d w` for every trainable weight
  of `ElmoLayer(trainable_bilm=True, dropout=0.0)` with the fixed linear
  loss `sum(elmo(ids) * probe)` (`probe` from `gradient_probe`), by the
  backend's autodiff (the test takes TensorFlow's with a GradientTape);
- `tiny/tf_keras_outputs`: `WORK/tensorflow.keras` (saved by the test
  under TensorFlow) loaded here and called on the fixture's ids;
- `tiny/keras_outputs`, `tiny/keras_reloaded`: the same kind of model
  built here, saved to `WORK/<backend>.keras` (the test loads that file
  under TensorFlow) and loaded back here.
"""

import os
import pathlib

import keras
import numpy as np

import keras_elmo
from tests.backends import backend_outputs
from tests.backends.backend_outputs import downstream_model
from tests.backends.backend_outputs import fixture_ids_and_labels
from tests.backends.backend_outputs import to_numpy


def gradient_probe(shape):
    """The fixed `[B, T, 2P]` weights of the linear gradient loss."""
    rng = np.random.default_rng(7)
    return rng.standard_normal(shape).astype("float32")


def bilm_layers(bilm, ids):
    """`([B, 3, T, 2P], mask [B, T])`: `bilm`'s layers, layer 0 = [x; x]."""
    outputs = bilm(ids)
    word = to_numpy(outputs["word_emb"])
    layers = np.stack(
        [
            np.concatenate([word, word], axis=-1),
            to_numpy(outputs["lstm_outputs1"]),
            to_numpy(outputs["lstm_outputs2"]),
        ],
        axis=1,
    )
    return layers, to_numpy(outputs["mask"])


LM_SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."], ["Hi"]]


def language_model_outputs():
    """`preset/lm/<direction>`: `LMSubstitutes.from_preset("elmo_small_en")`
    (the shipped `BiLMLanguageModel` with its softmax) log-probabilities
    `[sum n, V]` of `LM_SENTENCES`, the sentences concatenated."""
    from keras_elmo.models.language_model import LMSubstitutes

    per_sentence = LMSubstitutes.from_preset("elmo_small_en").log_probabilities(
        LM_SENTENCES
    )
    return {
        f"preset/lm/{direction}": np.concatenate(
            [sentence[direction] for sentence in per_sentence]
        )
        for direction in ("forward", "backward")
    }


def preset_outputs(work):
    """The shipped preset's layers here, its `save_allennlp`, and its
    language model's log-probabilities (`language_model_outputs`)."""
    ids, _ = fixture_ids_and_labels("tiny")
    bilm = keras_elmo.BiLM.from_preset("elmo_small_en")
    layers, mask = bilm_layers(bilm, ids)
    folder = os.path.join(work, f"{keras.config.backend()}_preset")
    os.makedirs(folder, exist_ok=True)
    bilm.save_allennlp(
        os.path.join(folder, "options.json"),
        os.path.join(folder, "weights.hdf5"),
    )
    return {
        "preset/layers": layers,
        "preset/mask": mask,
        **language_model_outputs(),
    }


def fit_outputs(name, options, weights, work):
    """The two deterministic fits; the fine-tuned biLM saved and dumped."""
    ids, labels = fixture_ids_and_labels(name)
    out, models = {}, {}
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
        models[key] = model
    (elmo,) = [
        layer
        for layer in models["fit_trainable_losses"].layers
        if isinstance(layer, keras_elmo.layers.ElmoLayer)
    ]
    bilm = elmo.bilm
    folder = os.path.join(work, f"{keras.config.backend()}_tuned")
    os.makedirs(folder, exist_ok=True)
    bilm.save_allennlp(
        os.path.join(folder, "options.json"),
        os.path.join(folder, "weights.hdf5"),
    )
    out[f"{name}/tuned/layers"] = bilm_layers(bilm, ids)[0]
    out[f"{name}/tuned/paths"] = np.array([w.path for w in bilm.weights])
    for i, weight in enumerate(bilm.weights):
        out[f"{name}/tuned/weight{i:03d}"] = to_numpy(weight.value)
    return out


def url_preset_outputs(name, work):
    """`{name/tuned/url_layers}`: `BiLM.from_preset` of the `file://` URL
    of the fine-tuned files (fetched into `WORK/cache`, the download
    path of the published presets, without the network)."""
    ids, _ = fixture_ids_and_labels(name)
    folder = os.path.join(work, f"{keras.config.backend()}_tuned")
    bilm = keras_elmo.BiLM.from_preset(
        pathlib.Path(folder).as_uri() + "/",
        cache_dir=os.path.join(work, "cache"),
    )
    return {f"{name}/tuned/url_layers": bilm_layers(bilm, ids)[0]}


def keras_file_outputs(name, options, weights, work):
    ids, _ = fixture_ids_and_labels(name)
    out = {}
    loaded = keras.saving.load_model(os.path.join(work, "tensorflow.keras"))
    out[f"{name}/tf_keras_outputs"] = to_numpy(loaded(ids))
    model = downstream_model(options, weights, dropout=0.0)
    out[f"{name}/keras_outputs"] = to_numpy(model(ids))
    path = os.path.join(work, f"{keras.config.backend()}.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    out[f"{name}/keras_reloaded"] = to_numpy(reloaded(ids))
    return out


def gradient_outputs(name, options, weights, gradients):
    """`{name/grad/<path>: array}`; `gradients(elmo, loss_fn)` returns
    `d loss_fn() / d w` for `elmo.trainable_variables`, in order."""
    ids, _ = fixture_ids_and_labels(name)
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    elmo = keras_elmo.layers.ElmoLayer(
        bilm, dropout=0.0, trainable_bilm=True, name="elmo"
    )
    probe = gradient_probe(tuple(elmo(ids).shape))
    grads = gradients(elmo, ids, probe)
    return {
        f"{name}/grad/{v.path}": to_numpy(g)
        for v, g in zip(elmo.trainable_variables, grads)
    }


def main(argv, gradients):
    """`argv`: `OUT.npz WORK name=options,weights ...`; `gradients(elmo,
    ids, probe)` -> the gradients of `sum(elmo(ids) * probe)` with
    respect to `elmo.trainable_variables`, by this backend's autodiff."""
    path, work, specs = argv[0], argv[1], argv[2:]
    base = path + ".base.npz"
    backend_outputs.main([base] + specs)
    results = dict(np.load(base, allow_pickle=False))
    results.update(preset_outputs(work))
    for spec in specs:
        name, files = spec.split("=", 1)
        options, weights = files.split(",")
        if name == "tiny":
            results.update(fit_outputs(name, options, weights, work))
            results.update(url_preset_outputs(name, work))
            results.update(gradient_outputs(name, options, weights, gradients))
            results.update(keras_file_outputs(name, options, weights, work))
    np.savez(path, **results)
