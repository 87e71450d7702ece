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
  changed resumes. Several input files (a Beam or Spark run) are
  `{"files": {path: identity}}`, compared file by file;
- the model a spec names, from its files alone, for a process that
  must not load it (a Beam launcher, a Spark driver):
  `keras_elmo.embedding.model_spec.model_files_identity`.

A finished HDF5 output (`embed`'s, a Spark run's `.hdf5`, or one
`embed-records` made of Beam shards) keeps its record as the JSON
string root attribute `keras_elmo_run` (`RUN_ATTRIBUTE`, variable-length,
so of any size; `hdf5_run_record(path)` reads it back), beside the
`allennlp elmo` datasets, which it leaves as they are.
"""

import hashlib
import json
import os

from keras_elmo.utils.digests import sha256_arrays
from keras_elmo.utils.digests import sha256_file
from keras_elmo.utils.digests import sha256_tree
from keras_elmo.version import __version__

SEED_STATE = "seed_generator"
RUN_ATTRIBUTE = "keras_elmo_run"


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
        "vocabulary": vocabulary_digest(vocabulary),
    }


def vocabulary_digest(vocabulary):
    """The sha256 of a token-cache vocabulary (a file, or a list of
    tokens joined by newlines), or None without one."""
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


def set_run_attribute(h5file, record):
    """Stores `record` in an open, writable `h5py.File` (its root
    attribute `RUN_ATTRIBUTE`, a JSON string)."""
    h5file.attrs[RUN_ATTRIBUTE] = json.dumps(record, sort_keys=True)


def hdf5_run_record(path):
    """The `run_record` a finished HDF5 output keeps, or None (a file
    written before keras_elmo recorded its runs, or by another tool)."""
    import h5py

    with h5py.File(path, "r") as f:
        text = f.attrs.get(RUN_ATTRIBUTE)
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json.loads(text)


def changes(recorded, current):
    """Human-readable differences between two `run_record`s ([] if the
    run may resume): which of the model, the input, the settings or the
    package version changed, with the recorded and current values."""
    found = []
    old, new = recorded.get("model"), current["model"]
    if old != new:
        found.append(f"the model ({_short(old)} -> {_short(new)})")
    found += _input_changes(recorded.get("input") or {}, current["input"])
    old, new = recorded.get("settings") or {}, current["settings"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            found.append(f"{key} ({old.get(key)!r} -> {new.get(key)!r})")
    old, new = recorded.get("version"), current["version"]
    if old != new:
        found.append(f"the keras_elmo version ({old} -> {new})")
    return found


def finished_run_note(recorded, current):
    """The sentence a refused rerun over a finished output adds (Beam,
    Spark): what changed since the run it records.

    Args:
        recorded: dict or None. The output's recorded `run_record`; None
            when there is no finished output, `{}` when it records none.
        current: callable returning this run's `run_record` (called only
            when there is something to compare).
    """
    if recorded is None:
        return ""
    if not recorded:
        return (
            " It is a finished run whose manifest records no run identity "
            "(an earlier keras_elmo version)."
        )
    different = changes(recorded, current())
    if not different:
        return (
            " It is a finished run of the same model, input files, settings "
            "and version: nothing to redo."
        )
    return f" It is a finished run; changed: {'; '.join(different)}."


def _input_changes(old, new):
    """What differs between two input identities: one file's content, or
    for several files (`{"files": {path: identity}}`) each file added,
    gone or changed."""
    if "files" not in new:
        if not _differ(old, new):
            return []
        return [f"the input file's content ({_content(old, new)})"]
    old_files, new_files = old.get("files") or {}, new["files"]
    found = []
    for path in sorted(set(old_files) | set(new_files)):
        before, after = old_files.get(path), new_files.get(path)
        if before is None:
            found.append(f"the input files (new: {path})")
        elif after is None:
            found.append(f"the input files (gone: {path})")
        elif _differ(before, after):
            found.append(
                f"the content of input file {path} ({_content(before, after)})"
            )
    return found


def _differ(old, new):
    """Content digests decide; a file with none (a remote Spark input) is
    compared by size and modification time."""
    if old.get("sha256") is None or new.get("sha256") is None:
        keys = ("size", "mtime_ns", "sha256")
        return any(old.get(k) != new.get(k) for k in keys)
    return old["sha256"] != new["sha256"]


def _content(old, new):
    return (
        f"size {old.get('size')} -> {new.get('size')} bytes, sha256 "
        f"{str(old.get('sha256'))[:12]} -> {str(new.get('sha256'))[:12]}"
    )


def _short(identity):
    if not isinstance(identity, dict):
        return repr(identity)
    parts = [str(identity.get("kind"))]
    for key in sorted(identity):
        if key != "kind" and identity[key] is not None:
            parts.append(f"{key} {str(identity[key])[:12]}")
    return ", ".join(parts)
