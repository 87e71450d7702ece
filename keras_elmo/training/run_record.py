"""`OUT/run.json`: what produced a training run, checked before a resume.

A fresh run writes the record (atomically, before its first checkpoint);
a run that finds checkpoints in `out_dir` compares the record with its
own and refuses to resume when anything that decides the computation
differs (`RunMismatch`, naming each difference), so a checkpoint is never
continued on another corpus, vocabulary, architecture or setting. The
record holds:

- `format`: the checkpoint format (`CHECKPOINT_FORMAT`). Format 1 (before
  keras_elmo recorded runs) had no `run.json` and no epoch loss totals in
  its `TrainingState`; such a run folder is refused by name, since
  nothing about it can be verified;
- `version`: the keras_elmo version that wrote the checkpoints;
- `model`: the sha256 of the architecture (`BiLMConfig.to_options_dict`),
  so a preset name and an options.json of the same architecture agree;
- `corpus` (`train`, `valid`): per pattern, the number of files and the
  sha256 of their sha256s in the order the pipeline reads them; moved or
  touched files with the same bytes resume;
- `vocabulary` and `init_from`: the sha256 of each file;
- `settings`: every other `TrainingConfig` field except those a resume
  may change without changing what is computed (`MAY_CHANGE`).
"""

import dataclasses
import hashlib
import json
import logging
import os

from keras_elmo.utils.atomic import atomic_write
from keras_elmo.utils.digests import sha256_file
from keras_elmo.version import __version__

logger = logging.getLogger(__name__)

CHECKPOINT_FORMAT = 2
RECORD = "run.json"
# Settings a resume may change: where and how often it saves and logs,
# how long it runs, the distribution strategy and op determinism.
MAY_CHANGE = frozenset(
    {
        "out_dir",
        "epochs",
        "checkpoint_every",
        "keep_checkpoints",
        "log_every",
        "verbose",
        "strategy",
        "deterministic",
    }
)
# Settings that name files: compared by content, not by path.
BY_CONTENT = frozenset({"train", "valid", "vocab", "model", "init_from"})


class RunMismatch(ValueError):
    """A resume found checkpoints it cannot trust (another run, or a
    format it cannot verify); the message names what differs."""


def run_record(config, model_config):
    """The record of a run of `config` (a `TrainingConfig`) training the
    architecture `model_config` (a `BiLMConfig`)."""
    from keras_elmo.data.corpus import list_files

    def corpus(pattern):
        if pattern is None:
            return None
        files = list_files(pattern)
        digest = hashlib.sha256()
        for path in files:
            digest.update(sha256_file(path).encode())
        return {"files": len(files), "sha256": digest.hexdigest()}

    options = json.dumps(model_config.to_options_dict(), sort_keys=True)
    settings = {
        field.name: _jsonable(getattr(config, field.name))
        for field in dataclasses.fields(config)
        if field.name not in MAY_CHANGE | BY_CONTENT
    }
    init_from = config.init_from or ()
    return {
        "format": CHECKPOINT_FORMAT,
        "version": __version__,
        "model": hashlib.sha256(options.encode()).hexdigest(),
        "corpus": {
            "train": corpus(config.train),
            "valid": corpus(config.valid),
        },
        "vocabulary": sha256_file(config.vocab),
        "init_from": [sha256_file(path) for path in init_from] or None,
        "settings": settings,
    }


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value


def record_path(out_dir):
    return os.path.join(out_dir, RECORD)


def read_record(out_dir):
    """The recorded run of `out_dir`, or None if it has none."""
    path = record_path(out_dir)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_record(out_dir, record):
    os.makedirs(out_dir, exist_ok=True)
    with atomic_write(record_path(out_dir)) as f:
        json.dump(record, f, indent=1, sort_keys=True)


def changes(recorded, current):
    """What differs between two records, in words ([]: may resume)."""
    found = []

    def differs(key, what, unit=""):
        old, new = recorded.get(key), current[key]
        if old != new:
            found.append(f"{what} ({unit}{_short(old)} -> {_short(new)})")

    differs("format", "the checkpoint format")
    differs("version", "the keras_elmo version")
    differs("model", "the architecture `model`", "sha256 ")
    for name in ("train", "valid"):
        old = (recorded.get("corpus") or {}).get(name)
        new = current["corpus"][name]
        if old != new:
            found.append(
                f"the corpus `{name}` (content: {_corpus(old)} -> "
                f"{_corpus(new)})"
            )
    differs("vocabulary", "the vocabulary `vocab`", "sha256 ")
    differs("init_from", "the files of `init_from`", "sha256 ")
    old, new = recorded.get("settings") or {}, current["settings"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            found.append(f"`{key}` ({old.get(key)!r} -> {new.get(key)!r})")
    return found


def _short(value):
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return repr(value)


def _corpus(facts):
    if not facts:
        return "none"
    return f"{facts['files']} file(s), sha256 {facts['sha256'][:12]}"


def check_resume(out_dir, current, checkpoint):
    """Raises `RunMismatch` unless `checkpoint` (the newest in `out_dir`)
    was written by a run with the record `current`."""
    recorded = read_record(out_dir)
    if recorded is None:
        raise RunMismatch(
            f"Cannot resume from {checkpoint!r}: {out_dir!r} holds "
            f"checkpoints of format 1 (no {RECORD}: written by a keras_elmo "
            "before checkpoint format 2, without the epoch's loss totals or "
            "a record of the corpus, vocabulary and settings), which this "
            f"keras_elmo {__version__} cannot verify. Pass `force=True` to "
            "discard them and start over (or train into another `out_dir`)."
        )
    found = changes(recorded, current)
    if found:
        raise RunMismatch(
            f"Cannot resume from {checkpoint!r}: it was written by another "
            f"run than this one; changed: {'; '.join(found)}. Rerun with the "
            "settings, corpus and vocabulary of the run that wrote it, or "
            "pass `force=True` to discard its checkpoints and start over "
            "(or train into another `out_dir`)."
        )


def prepare_run(out_dir, record, force=False, chief=True, verify=True):
    """Checks a resume, or starts a fresh run; returns the checkpoint a
    resume continues from, or None.

    With checkpoints in `out_dir/checkpoints` and not `force`: a resume,
    checked (`check_resume`) unless not `verify` (a reader of the
    checkpoint, not a run that continues it). Otherwise a fresh run: the
    chief removes what an earlier run left (checkpoints, best, logs,
    history; the `checkpoint` indexes first, so a kill part-way leaves
    no checkpoint to resume, only files a fresh run overwrites or
    ignores) and writes `record`, before the first checkpoint. The chief
    also removes the temporaries of killed atomic writes beside the
    run's outputs, history and record (`atomic.remove_abandoned`).
    """

    import tensorflow as tf

    if chief:
        remove_temporaries(out_dir)
    directory = os.path.join(out_dir, "checkpoints")
    latest = None
    if os.path.isdir(directory):
        latest = tf.train.latest_checkpoint(directory)
    if latest and not force:
        if verify:
            check_resume(out_dir, record, latest)
        return latest
    index = os.path.join(directory, "checkpoint")
    if not latest and not force and os.path.exists(index):
        named = tf.train.get_checkpoint_state(directory)
        raise RunMismatch(
            f"Cannot resume from {directory!r}: its index names "
            f"{getattr(named, 'model_checkpoint_path', None)!r}, whose "
            "files are missing (removed by hand?). Restore them, or pass "
            "`force=True` to discard the checkpoints and start over."
        )
    if not chief:
        return None
    if latest:
        logger.warning(
            "Starting over (force=True): discarding the checkpoints in %s.",
            directory,
        )
    start_fresh(out_dir, record)
    return None


def start_fresh(out_dir, record):
    """A fresh run's start, for either trainer: removes what an earlier
    run left (checkpoints, best, logs, history; the TensorFlow
    `checkpoint` indexes first, so a kill part-way leaves no checkpoint
    to resume, only files a fresh run overwrites or ignores), then
    writes `record`, before the first checkpoint."""
    import shutil

    for name in ("checkpoints", "best"):
        index = os.path.join(out_dir, name, "checkpoint")
        if os.path.exists(index):
            os.remove(index)
    for name in ("checkpoints", "best", "logs"):
        shutil.rmtree(os.path.join(out_dir, name), ignore_errors=True)
    history = os.path.join(out_dir, "history.json")
    if os.path.exists(history):
        os.remove(history)
    write_record(out_dir, record)


def remove_temporaries(out_dir):
    """Removes the temporaries of killed atomic writes beside a run's
    outputs, record and history (`atomic.remove_abandoned`: only those
    of dead processes)."""
    from keras_elmo.utils.atomic import remove_abandoned
    from keras_elmo.weights import hdf5 as model_files

    if not os.path.isdir(out_dir):
        return
    paths = list(model_files.model_paths(out_dir).values())
    paths += [record_path(out_dir), os.path.join(out_dir, "history.json")]
    for path in paths:
        remove_abandoned(path)
