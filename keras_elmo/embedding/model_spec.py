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
- `vocab`: a vocabulary whose token embeddings are cached;
- `trust_saved_model`: load a SavedModel `model` whose ops are not those
  of keras_elmo's export (`keras_elmo.export.saved_model`).

`model_files_identity(spec)` identifies the model a spec names from its
files alone, for a process that must not load it (a Beam launcher, a
Spark driver) but must record what produced an output
(`keras_elmo.embedding.run_identity.run_record`): the sha256 of
`options.json` and of the weights file, or of a `.keras` file, an
ELMoForManyLangs folder or a local archive, or a SavedModel's identity;
a source this process cannot read without downloading it (a published
name, a URL, `hf://`) is identified by its name only.
"""

import os

import keras

from keras_elmo.config import BiLMConfig
from keras_elmo.embedding.embedder import BiLMEmbedder
from keras_elmo.embedding.embedder import runner_for
from keras_elmo.embedding.run_identity import saved_model_identity
from keras_elmo.embedding.run_identity import vocabulary_digest
from keras_elmo.models.bilm import BiLM
from keras_elmo.presets import DEFAULT_PRESET
from keras_elmo.presets import sources as model_sources
from keras_elmo.utils.digests import sha256_file
from keras_elmo.utils.digests import sha256_tree

MODEL_ARGUMENTS = (
    "model",
    "options",
    "weights",
    "preset",
    "seed",
    "vocab",
    "random_weights",
    "trust_saved_model",
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
        seed = 0 if spec.get("seed") is None else spec["seed"]
        keras.utils.set_random_seed(seed)
        bilm = BiLM(BiLMConfig.from_architecture(spec["random_weights"]))
        embedder = BiLMEmbedder(bilm, vocabulary=spec.get("vocab"))
        return embedder, describe_model(spec)
    return model_sources.load(
        source_of(spec),
        _runner,
        vocab=spec.get("vocab"),
        trust_saved_model=bool(spec.get("trust_saved_model")),
    )


def describe_model(spec):
    """How `load_spec` names the model of `spec` (`"shipped preset
    elmo_small_en"`, `"model folder runs/small"`, ...), from the spec
    alone: nothing is loaded and nothing is downloaded. A local source is
    named by `resolve_model`, as `load_spec` names it; a published name
    not downloaded as its download would name it; any other remote
    source by itself. Beam's workers and Spark's driver name a run's
    model with this (the manifests' `model`)."""
    from keras_elmo.presets import published

    check_spec(spec)
    vocab = spec.get("vocab")
    suffix = f", token cache of {vocab}" if vocab else ""
    if spec.get("random_weights"):
        seed = 0 if spec.get("seed") is None else spec["seed"]
        return (
            f"RANDOMLY INITIALISED '{spec['random_weights']}' architecture "
            f"(seed {seed}): shapes and plumbing only, the vectors carry no "
            "meaning" + suffix
        )
    source = source_of(spec)
    local = _local_model(source)
    if isinstance(local, str):  # a local archive, not unpacked here
        return f"archive {local}" + suffix
    if local is not None:
        return model_sources.resolve_model(source).description + suffix
    if isinstance(source, (list, tuple)):
        return f"model at {source[1]}" + suffix
    model = published.find_published(str(source))
    if model is not None:
        return f"published preset {model.name}" + suffix
    archive = published.find_archive(str(source))
    if archive is not None:
        return f"published archive {archive.name}" + suffix
    return str(source) + suffix


def _runner(resolved, vocab, trust_saved_model):
    """`load_spec`'s build step: `(runner, description)`."""
    if vocab and resolved.format == "saved_model":
        raise ValueError(
            "`vocab` caches token embeddings of a BiLM; it does not apply "
            f"to the {resolved.description}."
        )
    runner = runner_for(
        resolved, vocabulary=vocab, trust_saved_model=trust_saved_model
    )
    suffix = f", token cache of {vocab}" if vocab else ""
    return runner, resolved.description + suffix


def model_files_identity(spec):
    """The identity of the model `spec` names
    (`keras_elmo.embedding.model_spec`), digested from its files: nothing is
    loaded, and nothing is downloaded.

    Returns:
        `{"kind": "random_weights", "architecture", "seed"}`;
        `{"kind": "files", "format", "options", "weights", "vocabulary"}`
        for a local AllenNLP pair, folder or shipped preset (sha256 of
        each file; `vocabulary` the token-cache vocabulary, as in
        `bilm_identity`); `{"kind": "files", "format", "tree",
        "vocabulary"}` for a `.keras` file, an ELMoForManyLangs folder or a
        local archive (sha256 of its bytes, `sha256_tree`); a SavedModel's
        `saved_model_identity`; else `{"kind": "source", "source"}`: a
        published name, a URL or `hf://`, named only (published presets
        and archives are pinned by their sha256 when downloaded).
    """
    check_spec(spec)
    if spec.get("random_weights"):
        seed = spec.get("seed")
        return {
            "kind": "random_weights",
            "architecture": spec["random_weights"],
            "seed": 0 if seed is None else seed,
            "vocabulary": vocabulary_digest(spec.get("vocab")),
        }
    resolved = _local_model(source_of(spec))
    if resolved is None:
        return {"kind": "source", "source": repr(source_of(spec))}
    if isinstance(resolved, str):  # a local archive, not unpacked here
        fields = {"format": "archive", "tree": sha256_file(resolved)}
    elif resolved.format == "saved_model":
        return saved_model_identity(resolved.path)
    elif resolved.format == "allennlp":
        fields = {
            "format": "allennlp",
            "options": sha256_file(resolved.options),
            "weights": sha256_file(resolved.weights),
        }
    else:
        fields = {"format": resolved.format, "tree": sha256_tree(resolved.path)}
    vocabulary = vocabulary_digest(spec.get("vocab"))
    return {"kind": "files", **fields, "vocabulary": vocabulary}


def _local_model(source):
    """The `ResolvedModel` of a source on this machine's disk, the path
    of a local archive, or None (a source that would be downloaded)."""
    from keras_elmo.presets import archives
    from keras_elmo.presets import available_presets
    from keras_elmo.presets.sources import allennlp_files
    from keras_elmo.presets.sources import detect_model
    from keras_elmo.presets.sources import resolve_model

    if isinstance(source, (list, tuple)):
        if all(os.path.isfile(str(p)) for p in source):
            return allennlp_files(str(source[0]), str(source[1]), "pair")
        return None
    source = os.fspath(source)
    if source in available_presets():
        return resolve_model(source)
    if "://" in source or not os.path.exists(source):
        return None
    if os.path.isfile(source) and archives.is_archive_name(source):
        return source
    return detect_model(source)
