"""Checkpoints: one format for every backend, and where each worker writes.

Every trainer (TensorFlow's `Trainer`, JAX's and PyTorch's
`NeutralTrainer`) saves its run into one `CheckpointStore`:
`OUT/checkpoints/ckpt-<step>` (`tf.train` files: `.index` and
`.data-*`, the `checkpoint` index naming the newest last) holds the
model's and the optimizer's variables by their place in
`model.variables` and `optimizer.variables`, the position and running
totals (`TrainingState`) and the loss scale. A run stopped on one
backend therefore resumes on another, at the step it stopped, with the
same weights and optimizer slots. `OUT/best/ckpt-<epoch>` holds the
weights of the epoch with the lowest validation perplexity.

A resume is checked first (`prepare_run`: another corpus,
vocabulary, architecture or setting is refused by name), then by the
store itself: variables of another count or shape, or a tensor whose
CRC32C does not match, are refused (`RunMismatch`).

`OUT/run.json`, the run record: what produced a training run, checked
before a resume.

A fresh run writes the record (atomically, before its first checkpoint);
a run that finds checkpoints in `out_dir` compares the record with its
own and refuses to resume when anything that decides the computation
differs (`RunMismatch`, naming each difference), so a checkpoint is never
continued on another corpus, vocabulary, architecture or setting. The
record holds:

- `format`: the checkpoint format (`CHECKPOINT_FORMAT`), the same on
  every backend (`CheckpointStore`). Format 1 (before
  keras_elmo recorded runs) had no `run.json` and no epoch loss totals in
  its `TrainingState`; such a run folder is refused by name, since
  nothing about it can be verified. Format 2 keyed the optimizer's
  variables by TensorFlow's attribute names (JAX and PyTorch wrote
  `.npz` files of their own); format 3 keys them by their place in
  `optimizer.variables`, on every backend;
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
import sys
import tempfile

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.training.safe_checkpoint import SafeCheckpointManager
from keras_elmo.training.training_config import init_from_files
from keras_elmo.utils.atomic import atomic_write
from keras_elmo.utils.digests import sha256_file
from keras_elmo.version import __version__

logger = logging.getLogger(__name__)

NO_BEST_YET = sys.float_info.max


class TrainingState(tf.Module):
    """What a resume needs besides weights and optimizer.

    The global step and position in the epoch, and the state of the
    validation rules (`evaluate.ValidationRules`): the current
    learning rate, the best validation perplexity so far, the epochs in a
    row without gain and whether early stopping has ended the run. And the
    epoch's running totals (the summed cross entropies of both directions
    and their token counts, float64), so that the history of an epoch
    interrupted and resumed reports the loss `0.5 * (S_f / N_f + S_b /
    N_b)` over all of its steps, exactly as an uninterrupted run does.

    Args:
        learning_rate: float, the rate a new run starts at.
    """

    def __init__(self, learning_rate=0.0):
        super().__init__(name="training_state")
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.batch_in_epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.learning_rate = tf.Variable(
            learning_rate, dtype=tf.float64, trainable=False
        )
        # The largest float64, not inf, so that a checkpoint holds only
        # finite numbers (a non-finite value is a sign of divergence).
        self.best_valid = tf.Variable(
            NO_BEST_YET, dtype=tf.float64, trainable=False
        )
        self.epochs_without_gain = tf.Variable(
            0, dtype=tf.int64, trainable=False
        )
        self.stopped = tf.Variable(False, trainable=False)
        self.epoch_sums = tf.Variable(
            np.zeros(2), dtype=tf.float64, trainable=False
        )
        self.epoch_counts = tf.Variable(
            np.zeros(2), dtype=tf.float64, trainable=False
        )

    def epoch_totals(self, skip):
        """`(sums, counts)`, float64 `[2]`: zeros for an epoch that starts
        at batch 0, else the totals of its first `skip` batches."""
        if skip == 0:
            return np.zeros(2), np.zeros(2)
        return np.array(self.epoch_sums.numpy()), np.array(
            self.epoch_counts.numpy()
        )

    def keep_epoch_totals(self, sums, counts):
        """Stores the running totals (checkpointed with the rest)."""
        self.epoch_sums.assign(sums)
        self.epoch_counts.assign(counts)


class CheckpointStore:
    """The checkpoints of a run, one format on every backend.

    A `tf.train.Checkpoint` of

        model_variables/<i>      the model's variables, `model.variables`
                                 order (weights and the Keras seed-generator
                                 states that drive dropout);
        optimizer_variables/<i>  the optimizer's, `optimizer.variables`
                                 order (iterations, learning rate, slots);
        state                    `TrainingState` (position, running
                                 totals, validation rules' state);
        loss_scale               the float16 loss scale (1 otherwise),

    every entry keyed by its place in those lists, not by a backend's
    variable names, so a checkpoint written on one backend is restored on
    another. On TensorFlow the Keras variables are checkpointed in place;
    on JAX and PyTorch host-side `tf.Variable` copies of the same shapes
    and TensorFlow's dtypes (`mirrored`, `_mirror`) are filled from the
    Keras variables before a save (`save`) and copied into them after a
    restore (`restore`).

    Saves go through `SafeCheckpointManager`: TensorFlow writes the data
    files first and the `checkpoint` index last, by rename, so a kill
    leaves the previous checkpoint usable, and a save that fails for lack
    of space or permission raises `WriteFailed` naming the checkpoint and
    the one a rerun resumes from. What killed saves left in the directory
    is removed first (`remove_unindexed`). Each tensor carries a CRC32C in
    the index; a restore that finds one that does not match, or a
    variable of another shape, raises `RunMismatch` (the run does not
    start).

    Args:
        directory: str, the checkpoint folder.
        keep: int, checkpoints kept.
        model: the built `BiLMLanguageModel`.
        optimizer: its built Keras optimizer, or None (a store of weights:
            the best validation epoch's).
        state: `TrainingState`, or None.
        loss_scale: a float32 scalar `tf.Variable`, or None.
    """

    def __init__(
        self,
        directory,
        keep,
        model,
        optimizer=None,
        state=None,
        loss_scale=None,
    ):
        self.mirrored = keras.config.backend() != "tensorflow"
        self.groups = {"model_variables": list(model.variables)}
        if optimizer is not None:
            self.groups["optimizer_variables"] = list(optimizer.variables)
        objects = {
            name: [_mirror(v) for v in variables]
            if self.mirrored
            else variables
            for name, variables in self.groups.items()
        }
        self.objects = objects
        self.extras = {}
        if state is not None:
            self.extras["state"] = state
        if loss_scale is not None:
            self.extras["loss_scale"] = loss_scale
        self.checkpoint = tf.train.Checkpoint(**objects, **self.extras)
        # Whether the checkpoint restored last held no optimizer state
        # (`drop_optimizer_state`).
        self.optimizer_dropped = False
        self.manager = SafeCheckpointManager(
            self.checkpoint, directory, max_to_keep=keep
        )
        self.manager.remove_unindexed()

    @property
    def directory(self):
        return self.manager.directory

    @property
    def latest_checkpoint(self):
        return self.manager.latest_checkpoint

    def save(self, checkpoint_number):
        """Writes checkpoint `ckpt-<checkpoint_number>`; returns its path."""
        if self.mirrored:
            for name, variables in self.groups.items():
                for mirror, variable in zip(self.objects[name], variables):
                    mirror.assign(_numpy(variable, mirror.dtype))
        return self.manager.save(checkpoint_number=checkpoint_number)

    def restore(self, path=None):
        """Restores checkpoint `path` (default the newest) into the
        variables; returns its path, or None when there is none.

        Raises:
            RunMismatch: its variables are not this run's (a
                count or a shape differs), or its data fails its checksum.
        """
        path = path or self.latest_checkpoint
        if not path:
            return None
        groups = self._check_shapes(path)
        self.optimizer_dropped = len(groups) < len(self.groups)
        checkpoint = self.checkpoint
        if self.optimizer_dropped:
            checkpoint = tf.train.Checkpoint(
                **{name: self.objects[name] for name in groups}, **self.extras
            )
        try:
            status = checkpoint.restore(path)
            status.assert_existing_objects_matched()
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
            raise RunMismatch(
                f"Cannot resume from {path!r}: its files fail their "
                f"checksum or cannot be read ({type(e).__name__}: "
                f"{str(e).splitlines()[0]}); they were changed or damaged "
                "after they were written. Remove that checkpoint to resume "
                "from an earlier one, or pass `force=True` to start over."
            ) from e
        if self.mirrored:
            for name in groups:
                variables = self.groups[name]
                for mirror, variable in zip(self.objects[name], variables):
                    variable.assign(
                        mirror.numpy().astype(np.dtype(variable.dtype))
                    )
        return path

    def drop_optimizer_state(self):
        """Rewrites the newest checkpoint without the optimizer's
        variables (its slots: as many numbers as the model's again, for
        Adam twice as many) and removes the older checkpoints; returns
        its path, or None when there is none.

        For the end of a run: the checkpoint keeps the model's variables,
        the position and the loss scale, so a rerun of the finished run
        still finds it finished (and a run killed before its model files
        were written still writes them), while a longer run cannot
        continue it (`optimizer_dropped` after `restore`). The values are
        copied to the host and written by this process alone (no
        collective save). Killed part-way, the index names the previous
        checkpoint, which still holds the optimizer.
        """
        latest = self.latest_checkpoint
        if not latest or "optimizer_variables" not in self.groups:
            return latest
        number = int(latest.rsplit("-", 1)[-1])
        copies = []
        for variable in self.groups["model_variables"]:
            mirror = _mirror(variable)
            mirror.assign(_numpy(variable, mirror.dtype))
            copies.append(mirror)
        extras = {}
        with tf.device("CPU:0"):
            for name, tracked in self.extras.items():
                extras[name] = _host_copy(tracked)
        slim = tf.train.Checkpoint(model_variables=copies, **extras)
        manager = SafeCheckpointManager(slim, self.directory, max_to_keep=1)
        path = manager.save(checkpoint_number=number)
        logger.info(
            "Dropped the optimizer state: %s keeps the weights and position.",
            path,
        )
        return path

    def _check_shapes(self, path):
        """Checks the stored variables' count and shapes against this
        run's; returns the groups the checkpoint holds (all, or all but
        `optimizer_variables` for one written by `drop_optimizer_state`)."""
        try:
            found = dict(tf.train.list_variables(path))
        except (tf.errors.DataLossError, tf.errors.OpError) as e:
            raise RunMismatch(
                f"Cannot resume from {path!r}: its index cannot be read "
                f"({type(e).__name__}: {str(e).splitlines()[0]}). Remove "
                "that checkpoint to resume from an earlier one, or pass "
                "`force=True` to start over."
            ) from e
        groups = [
            name
            for name in self.groups
            if name != "optimizer_variables"
            or f"{name}/0/{_VALUE}" in found
            or not self.groups[name]
        ]
        for name in groups:
            variables = self.groups[name]
            expected = [tuple(v.shape) for v in variables]
            stored = []
            while f"{name}/{len(stored)}/{_VALUE}" in found:
                stored.append(tuple(found[f"{name}/{len(stored)}/{_VALUE}"]))
            if stored != expected:
                where = next(
                    (
                        i
                        for i, (a, b) in enumerate(zip(stored, expected))
                        if a != b
                    ),
                    min(len(stored), len(expected)),
                )
                raise RunMismatch(
                    f"Cannot resume from {path!r}: it holds {len(stored)} "
                    f"{name.replace('_', ' ')}, this run has {len(expected)}"
                    f"; the first that differs is #{where} (stored "
                    f"{_shape_at(stored, where)}, expected "
                    f"{_shape_at(expected, where)}). Pass `force=True` to "
                    "start over."
                )
        return groups


_VALUE = ".ATTRIBUTES/VARIABLE_VALUE"


def _host_copy(tracked):
    """A host copy of a lone variable (the loss scale), or of a
    `TrainingState`'s variables as a checkpoint keyed by their attribute
    names, as `tf.train.Checkpoint` keys the original."""
    if isinstance(tracked, tf.Variable):
        return tf.Variable(tracked.numpy(), trainable=False)
    return tf.train.Checkpoint(
        **{
            name: tf.Variable(value.numpy(), trainable=False)
            for name, value in vars(tracked).items()
            if isinstance(value, tf.Variable)
        }
    )


def _shape_at(shapes, i):
    return list(shapes[i]) if i < len(shapes) else "nothing"


def _numpy(variable, dtype=None):
    """A Keras variable's value as NumPy (torch parameters need their
    gradient tracking dropped first: `convert_to_numpy` does it)."""
    value = np.asarray(keras.ops.convert_to_numpy(variable.value))
    return value if dtype is None else value.astype(dtype.as_numpy_dtype)


def _mirror(variable):
    """A host `tf.Variable` of `variable`'s shape and checkpointed dtype:
    its own, but int64 for every integer (TensorFlow keeps the optimizer's
    step counter and the seed-generator states as int64, JAX as int32 and
    uint32; the values fit either)."""
    dtype = np.dtype(variable.dtype)
    if dtype.kind in "iu":
        dtype = np.dtype("int64")
    with tf.device("CPU:0"):
        return tf.Variable(np.zeros(variable.shape, dtype), trainable=False)


def make_stores(model, optimizer, state, loss_scale, out_dir, strategy, keep):
    """`(store, best)`: the run's `CheckpointStore` in `out_dir/checkpoints`
    and the one-slot store of the best validation epoch's weights in
    `out_dir/best`. Under a multi-worker strategy every worker saves (the
    save is collective), but only the chief writes to `out_dir`; the
    others use a temporary directory."""
    store = CheckpointStore(
        _directory(out_dir, "checkpoints", strategy),
        keep,
        model,
        optimizer,
        state,
        loss_scale,
    )
    best = CheckpointStore(_directory(out_dir, "best", strategy), 1, model)
    return store, best


def _directory(out_dir, name, strategy):
    if strategy is not None:
        from keras_elmo.training.distributed_data import is_chief

        if not is_chief(strategy):
            return tempfile.mkdtemp(prefix="keras_elmo_worker_ckpt_")
    return os.path.join(out_dir, name)


def restore_best(best):
    """Restores the newest checkpoint of the best-weights store.

    Returns its epoch (1-based; the checkpoint number), or None when
    validation never chose one.
    """
    latest = best.restore()
    if not latest:
        return None
    epoch = int(latest.rsplit("-", 1)[-1])
    logger.info("Restored the weights of epoch %d (best validation).", epoch)
    return epoch


def summary_writer(out_dir, chief):
    if not chief:
        return None
    return tf.summary.create_file_writer(os.path.join(out_dir, "logs"))


# --- the run record --------------------------------------------------------
CHECKPOINT_FORMAT = 3
RECORD = "run.json"
# Settings a resume may change: where and how often it saves and logs,
# what it keeps at its end, how long it runs, the distribution strategy
# and op determinism.
MAY_CHANGE = frozenset(
    {
        "out_dir",
        "epochs",
        "checkpoint_every",
        "keep_checkpoints",
        "keep_optimizer_state",
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
    return {
        "format": CHECKPOINT_FORMAT,
        "version": __version__,
        "model": hashlib.sha256(options.encode()).hexdigest(),
        "corpus": {
            "train": corpus(config.train),
            "valid": corpus(config.valid),
        },
        "vocabulary": sha256_file(config.vocab),
        "init_from": _init_from_digests(config.init_from),
        "settings": settings,
    }


def _init_from_digests(init_from):
    """sha256 of each file `init_from` resolves to (None without one)."""
    if not init_from:
        return None
    return [sha256_file(path) for path in init_from_files(init_from)]


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
