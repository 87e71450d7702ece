"""What produced a resumable output: digests of its model and its input.

An interrupted run records these identities, and a resumed run compares
them with its own before keeping anything (`changes(recorded, current)`
names what differs), so vectors of two models, or of two versions of an
input file, are never mixed in one output.

- a BiLM (`bilm_identity`): the sha256 of its options (`to_options_dict`)
  and of its weights in memory (every variable's path, dtype, shape and
  bytes; dropout seed states excluded), so the same model loaded from
  `weights.hdf5`, a `.keras` file or built in memory has one identity; plus
  the digest of the token-embedding-cache vocabulary, if any;
- a SavedModel (`saved_model_identity`): TensorFlow's fingerprint
  (`fingerprint.pb`, written by every export since TF 2.12), else the
  sha256 of `saved_model.pb` and `variables/`;
- an input file (`input_identity`): its size, modification time and the
  sha256 of its bytes. Only the content decides: a file touched but not
  changed resumes.
"""

import hashlib
import json
import os

from keras_elmo.utils.digests import sha256_arrays
from keras_elmo.utils.digests import sha256_file
from keras_elmo.utils.digests import sha256_tree
from keras_elmo.version import __version__

SEED_STATE = "seed_generator"


def bilm_identity(bilm, vocabulary=None):
    """`{"kind": "bilm", "options", "weights", "vocabulary"}` digests."""
    import keras

    options = json.dumps(bilm.config.to_options_dict(), sort_keys=True)
    arrays = [
        (v.path, keras.ops.convert_to_numpy(v))
        for v in bilm.weights
        if SEED_STATE not in v.path
    ]
    return {
        "kind": "bilm",
        "options": hashlib.sha256(options.encode()).hexdigest(),
        "weights": sha256_arrays(arrays),
        "vocabulary": _vocabulary_digest(vocabulary),
    }


def _vocabulary_digest(vocabulary):
    if vocabulary is None:
        return None
    if isinstance(vocabulary, (str, os.PathLike)):
        return sha256_file(vocabulary)
    text = "\n".join(vocabulary)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def saved_model_identity(path):
    """`{"kind": "saved_model", "fingerprint"}` of a SavedModel folder."""
    import tensorflow as tf

    try:
        fingerprint = tf.saved_model.experimental.read_fingerprint(path)
        value = f"fingerprint:{fingerprint.singleprint()}"
    except (FileNotFoundError, tf.errors.NotFoundError, ValueError):
        graph = sha256_file(os.path.join(path, "saved_model.pb"))
        value = f"files:{graph}:{sha256_tree(os.path.join(path, 'variables'))}"
    return {"kind": "saved_model", "fingerprint": value}


def input_identity(path):
    """`{"size", "mtime_ns", "sha256"}` of an input file."""
    stat = os.stat(path)
    return {
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "sha256": sha256_file(path),
    }


def run_record(model, input_file, settings):
    """The identity a resumable output records (JSON-serialisable)."""
    return {
        "model": model,
        "input": input_file,
        "settings": settings,
        "version": __version__,
    }


def changes(recorded, current):
    """Human-readable differences between two `run_record`s ([] if the
    run may resume): which of the model, the input, the settings or the
    package version changed, with the recorded and current values."""
    found = []
    old, new = recorded.get("model"), current["model"]
    if old != new:
        found.append(f"the model ({_short(old)} -> {_short(new)})")
    old, new = recorded.get("input") or {}, current["input"]
    if old.get("sha256") != new["sha256"]:
        found.append(
            f"the input file's content (size {old.get('size')} -> "
            f"{new['size']} bytes, sha256 {str(old.get('sha256'))[:12]} -> "
            f"{new['sha256'][:12]})"
        )
    old, new = recorded.get("settings") or {}, current["settings"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            found.append(f"{key} ({old.get(key)!r} -> {new.get(key)!r})")
    old, new = recorded.get("version"), current["version"]
    if old != new:
        found.append(f"the keras_elmo version ({old} -> {new})")
    return found


def _short(identity):
    if not isinstance(identity, dict):
        return repr(identity)
    parts = [str(identity.get("kind"))]
    for key in sorted(identity):
        if key != "kind" and identity[key] is not None:
            parts.append(f"{key} {str(identity[key])[:12]}")
    return ", ".join(parts)
