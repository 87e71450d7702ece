"""The identity of the model a spec names, from its files alone.

For a process that must not load the model (a Beam launcher, a Spark
driver) but must record what produced an output
(`keras_elmo.embedding.run_identity.run_record`): the sha256 of
`options.json` and of the weights file, or of a `.keras` file, an
ELMoForManyLangs folder or a local archive, or a SavedModel's identity;
a source this process cannot read without downloading it (a published
name, a URL, `hf://`) is identified by its name only. A spec is the
model arguments of `keras_elmo.embedding.model_spec`.
"""

import os

from keras_elmo.embedding.model_spec import check_spec
from keras_elmo.embedding.model_spec import source_of
from keras_elmo.embedding.run_identity import saved_model_identity
from keras_elmo.embedding.run_identity import vocabulary_digest
from keras_elmo.utils.digests import sha256_file
from keras_elmo.utils.digests import sha256_tree


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
    from keras_elmo.presets.model_formats import allennlp_files
    from keras_elmo.presets.model_formats import detect_model
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
