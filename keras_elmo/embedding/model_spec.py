"""A model named by plain values (a spec), as bulk-embedding workers get it.

A Beam or Spark worker cannot receive a loaded model, only what names it:
a dict of `MODEL_ARGUMENTS`. `load_spec(spec)` turns it into the runner
the in-process `Embedder` uses, through the same resolver
(`keras_elmo.presets.sources.resolve_model`), so every engine computes the
same vectors:

- `model`: any source `resolve_model` accepts (a SavedModel or TF Serving
  folder, a `gs://`-style SavedModel URI, a trained folder, a `.zip`, a
  `.keras` file, a preset name, a URL);
- else `options` + `weights` (paths or URLs);
- else `preset` (default `DEFAULT_PRESET`, the shipped model);
- `random_weights`: an architecture name of `BiLMConfig.from_architecture`
  (`"tiny"`, ...) built with random weights from `seed`, an explicit
  choice for plumbing tests, never a fallback;
- `vocab`: a vocabulary whose token embeddings are cached.
"""

import keras

from keras_elmo.config import BiLMConfig
from keras_elmo.embedding.runners import BiLMEmbedder
from keras_elmo.embedding.runners import runner_for
from keras_elmo.models.bilm import BiLM
from keras_elmo.presets import DEFAULT_PRESET
from keras_elmo.presets import sources as model_sources

MODEL_ARGUMENTS = (
    "model",
    "options",
    "weights",
    "preset",
    "seed",
    "vocab",
    "random_weights",
)


def check_spec(spec):
    """Refuses unknown keys and more than one model in `spec`."""
    unknown = sorted(set(spec) - set(MODEL_ARGUMENTS))
    if unknown:
        raise ValueError(
            f"Received an invalid `spec`, expected keys among "
            f"{MODEL_ARGUMENTS}, got unknown keys {unknown}."
        )
    if bool(spec.get("options")) != bool(spec.get("weights")):
        raise ValueError(
            "`options` and `weights` go together, received "
            f"options={spec.get('options')!r} weights={spec.get('weights')!r}."
        )
    given = [
        key
        for key in ("model", "options", "preset", "random_weights")
        if spec.get(key)
    ]
    if len(given) > 1:
        named = ", ".join(f"`{key}`" for key in given)
        raise ValueError(
            f"Give the model once, received both {named} (expected one of "
            "`model`, `options` + `weights`, `preset`, `random_weights`)."
        )


def source_of(spec):
    """What `resolve_model` gets for a trained-model spec."""
    if spec.get("model"):
        return spec["model"]
    if spec.get("options"):
        return (spec["options"], spec["weights"])
    return spec.get("preset") or DEFAULT_PRESET


def load_spec(spec):
    """`(runner, description)` of the model a spec names."""
    check_spec(spec)
    if spec.get("random_weights"):
        name = spec["random_weights"]
        seed = 0 if spec.get("seed") is None else spec["seed"]
        keras.utils.set_random_seed(seed)
        bilm = BiLM(BiLMConfig.from_architecture(name))
        description = (
            f"RANDOMLY INITIALISED '{name}' architecture (seed {seed}): "
            "shapes and plumbing only, the vectors carry no meaning"
        )
        vocab = spec.get("vocab")
        if vocab:
            description += f", token cache of {vocab}"
        return BiLMEmbedder(bilm, vocabulary=vocab), description
    resolved = model_sources.resolve_model(source_of(spec))
    vocab = spec.get("vocab")
    if vocab and resolved.format == "saved_model":
        raise ValueError(
            "`vocab` caches token embeddings of a BiLM; it does not apply "
            f"to the {resolved.description}."
        )
    runner = runner_for(resolved, vocabulary=vocab)
    suffix = f", token cache of {vocab}" if vocab else ""
    return runner, resolved.description + suffix
