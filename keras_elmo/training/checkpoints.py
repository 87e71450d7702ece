"""Checkpoints: what is saved, where each worker writes, atomic outputs.

TensorFlow (`Trainer`) saves `tf.train` checkpoints (`make_manager`, the
index written last: `SafeCheckpointManager`) of `TrainingState`, the model
and the optimizer. JAX and PyTorch (`NeutralTrainer`) save the same state
without TensorFlow's checkpoint machinery, one `.npz` per save (`save`,
`load`, `prepare_run`, `save_best`, `load_best`); a run folder of one
format is refused by the other trainer. The `.npz` format:

`OUT/checkpoints/ckpt-<step>.npz` holds plain arrays (no Python
objects; read with `allow_pickle=False`):

- `model/<i>`: the model's variables in `model.variables` order (the
  weights and the Keras seed-generator states that drive dropout), with
  their paths in `model_paths` (for readers; a restore checks the
  shapes, since Keras numbers the names of a second model built in one
  process);
- `optimizer/<i>`: the optimizer's variables (iterations, learning
  rate, moments), with `optimizer_paths`;
- `state/<name>`: the position and the epoch's running totals
  (`POSITION`: step, epoch, batch in epoch, epoch loss sums and token
  counts, the learning rate, and the validation rules' best perplexity,
  epochs without gain and whether early stopping ended the run).

`OUT/best/best.npz` holds the weights of the epoch with the lowest
validation perplexity (`save_best`), written when a validation set is
given; the model a run writes at the end is that one.

Each file is written to a temporary beside it and renamed into place
(`utils.atomic.atomic_path`), so a kill leaves the previous checkpoints
intact; the newest is the one with the largest step (an epoch-end save
at the step of a step save replaces it, with the later position). A run
folder is prepared by `prepare_run`: the `run.json` check of
`run_record` (another corpus, vocabulary, architecture or setting is
refused by name), or a fresh start.
"""

import glob
import logging
import os
import re
import sys
import tempfile

import numpy as np
import tensorflow as tf

from keras_elmo.training import run_record
from keras_elmo.training.safe_checkpoint import SafeCheckpointManager
from keras_elmo.utils.atomic import atomic_path
from keras_elmo.utils.atomic import remove_abandoned

logger = logging.getLogger(__name__)

NO_BEST_YET = sys.float_info.max


class TrainingState(tf.Module):
    """What a resume needs besides weights and optimizer.

    The global step and position in the epoch, and the state of the
    validation rules (`validation_rules.ValidationRules`): the current
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


def make_manager(
    model, optimizer, state, loss_scale, out_dir, strategy, keep=3
):
    """A `tf.train.CheckpointManager` over everything a resume needs.

    The model's variables include the dropout RNG states (Keras seed
    generators), so a resumed run draws the same masks. TensorFlow writes
    the checkpoint files first and the `checkpoint` index last, by rename:
    a kill leaves the previous checkpoint usable, and a save that fails for
    lack of space or permission raises `WriteFailed` naming the checkpoint
    and the one a rerun resumes from (`SafeCheckpointManager`). Under a
    multi-worker strategy every worker saves (the save is collective), but
    only the chief writes to `out_dir/checkpoints`; the others use a
    temporary directory. What killed saves left there is removed first
    (`SafeCheckpointManager.remove_unindexed`).
    """
    # Keras 3 functional models do not expose their layers to
    # `tf.train.Checkpoint`, so the model's variables (weights and the
    # seed-generator states that drive dropout) are listed explicitly;
    # their order is fixed by the model's construction.
    checkpoint = tf.train.Checkpoint(
        model_variables=list(model.variables),
        optimizer=optimizer,
        state=state,
        loss_scale=loss_scale.value,
    )
    directory = _directory(out_dir, "checkpoints", strategy)
    manager = SafeCheckpointManager(checkpoint, directory, max_to_keep=keep)
    manager.remove_unindexed()
    return manager


def _directory(out_dir, name, strategy):
    from keras_elmo.training.distributed_data import is_chief

    if not is_chief(strategy):
        return tempfile.mkdtemp(prefix="keras_elmo_worker_ckpt_")
    return os.path.join(out_dir, name)


def make_best_manager(model, out_dir, strategy):
    """A one-slot `CheckpointManager` in `out_dir/best` for the weights of
    the epoch with the lowest validation perplexity (the index written
    last, like every checkpoint; only the chief writes to `out_dir`)."""
    checkpoint = tf.train.Checkpoint(model_variables=list(model.variables))
    directory = _directory(out_dir, "best", strategy)
    manager = SafeCheckpointManager(checkpoint, directory, max_to_keep=1)
    manager.remove_unindexed()
    return manager


def restore_best(best_manager):
    """Restores the newest checkpoint of `make_best_manager`'s manager.

    Returns its epoch (1-based; the checkpoint number), or None when
    validation never chose one.
    """
    latest = best_manager.latest_checkpoint
    if not latest:
        return None
    best_manager.checkpoint.restore(latest).assert_existing_objects_matched()
    epoch = int(latest.rsplit("-", 1)[-1])
    logger.info("Restored the weights of epoch %d (best validation).", epoch)
    return epoch


def restore_latest(manager):
    """Restores the newest checkpoint, if any; returns its path or None."""
    latest = manager.latest_checkpoint
    if latest:
        manager.checkpoint.restore(latest).assert_existing_objects_matched()
    return latest


def summary_writer(out_dir, chief):
    if not chief:
        return None
    return tf.summary.create_file_writer(os.path.join(out_dir, "logs"))


# `run.json`'s `format` for these checkpoints (the TensorFlow trainer's
# is `run_record.CHECKPOINT_FORMAT`): a folder of one is never resumed
# by the other.
NEUTRAL_FORMAT = "npz-1"
POSITION = (
    "step",
    "epoch",
    "batch_in_epoch",
    "epoch_sums",
    "epoch_counts",
    "learning_rate",
    "best_valid",
    "epochs_without_gain",
    "stopped",
)
# The validation rules' state (`ValidationRules.decide`) a checkpoint
# written before they ran here lacks: a run without validation.
NO_VALIDATION_YET = {
    "best_valid": NO_BEST_YET,
    "epochs_without_gain": 0,
    "stopped": False,
}
_NAME = re.compile(r"ckpt-(\d+)\.npz$")


def checkpoint_dir(out_dir):
    return os.path.join(out_dir, "checkpoints")


def list_checkpoints(out_dir):
    """The `.npz` checkpoints of `out_dir`, oldest (lowest step) first."""
    found = []
    for path in glob.glob(os.path.join(checkpoint_dir(out_dir), "*.npz")):
        match = _NAME.search(os.path.basename(path))
        if match:
            found.append((int(match.group(1)), path))
    return [path for _, path in sorted(found)]


def latest_checkpoint(out_dir):
    found = list_checkpoints(out_dir)
    return found[-1] if found else None


def save(out_dir, step, model_arrays, optimizer_arrays, position, paths, keep):
    """Writes `ckpt-<step>.npz` atomically; keeps the `keep` newest.

    Args:
        model_arrays, optimizer_arrays: lists of NumPy arrays.
        position: dict of the `POSITION` values.
        paths: `(model_paths, optimizer_paths)`, lists of str.
        keep: int, checkpoints kept.
    """
    arrays = {f"model/{i}": a for i, a in enumerate(model_arrays)}
    arrays.update({f"optimizer/{i}": a for i, a in enumerate(optimizer_arrays)})
    arrays.update({f"state/{k}": np.asarray(position[k]) for k in POSITION})
    arrays["model_paths"] = np.array(paths[0], dtype=str)
    arrays["optimizer_paths"] = np.array(paths[1], dtype=str)
    path = os.path.join(checkpoint_dir(out_dir), f"ckpt-{step:09d}.npz")
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
    for old in list_checkpoints(out_dir)[:-keep]:
        os.remove(old)
    return path


def load(path, shapes):
    """`(model_arrays, optimizer_arrays, position)` of a checkpoint.

    Args:
        shapes: `(model_shapes, optimizer_shapes)`, lists of tuples: the
            variables of the run restoring it.

    Raises:
        run_record.RunMismatch: the checkpoint's variables do not have
            these shapes.
    """
    with np.load(path, allow_pickle=False) as data:
        parts = []
        for prefix, expected in zip(("model", "optimizer"), shapes):
            arrays = []
            while f"{prefix}/{len(arrays)}" in data.files:
                arrays.append(data[f"{prefix}/{len(arrays)}"])
            found = [tuple(a.shape) for a in arrays]
            if found != [tuple(s) for s in expected]:
                raise run_record.RunMismatch(
                    f"Cannot resume from {path!r}: its {prefix} variables "
                    f"({len(found)}) do not have the shapes of this run's "
                    f"({len(expected)}). Pass `force=True` to start over."
                )
            parts.append(arrays)
        position = {
            k: data[f"state/{k}"]
            if f"state/{k}" in data.files
            else NO_VALIDATION_YET[k]
            for k in POSITION
        }
    return parts[0], parts[1], position


def best_path(out_dir):
    """`OUT/best/best.npz`: the weights of the best validation epoch."""
    return os.path.join(out_dir, "best", "best.npz")


def save_best(out_dir, epoch, model_arrays):
    """Writes the model's arrays of 1-based `epoch` as the best, atomically
    (the best of an earlier epoch is replaced in one rename)."""
    path = best_path(out_dir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    arrays = {f"model/{i}": a for i, a in enumerate(model_arrays)}
    arrays["epoch"] = np.asarray(epoch)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)


def load_best(out_dir, model_shapes):
    """`(epoch, model_arrays)` of `save_best`, or `(None, None)` when
    validation never chose one.

    Raises:
        run_record.RunMismatch: its arrays do not have `model_shapes`.
    """
    path = best_path(out_dir)
    if not os.path.exists(path):
        return None, None
    with np.load(path, allow_pickle=False) as data:
        arrays = []
        while f"model/{len(arrays)}" in data.files:
            arrays.append(data[f"model/{len(arrays)}"])
        epoch = int(data["epoch"])
    if [tuple(a.shape) for a in arrays] != [tuple(s) for s in model_shapes]:
        raise run_record.RunMismatch(
            f"Cannot restore the best weights from {path!r}: its arrays do "
            "not have the shapes of this run's model."
        )
    return epoch, arrays


def neutral_record(config, model_config):
    """`run_record.run_record` with this trainer's checkpoint format."""
    record = run_record.run_record(config, model_config)
    record["format"] = NEUTRAL_FORMAT
    return record


def prepare_run(out_dir, record, force=False):
    """Checks a resume, or starts a fresh run; returns the checkpoint a
    resume continues from, or None.

    As `run_record.prepare_run`, for `.npz` checkpoints: the temporaries
    of killed writes (outputs, record, history, checkpoints) are removed
    (`atomic.remove_abandoned`: only those of dead processes); a folder with
    TensorFlow checkpoints (`checkpoints/checkpoint`) is refused unless
    `force`; a fresh run removes the checkpoints, logs and history of an
    earlier one and writes `record` before its first checkpoint.
    """
    directory = checkpoint_dir(out_dir)
    run_record.remove_temporaries(out_dir)
    if os.path.isdir(directory):
        # The temporaries of killed saves: `.ckpt-<step>.npz.HOST-PID.*`.
        for entry in os.listdir(directory):
            match = re.match(r"\.(ckpt-\d+\.npz)\.", entry)
            if match:
                remove_abandoned(os.path.join(directory, match.group(1)))
    best = os.path.dirname(best_path(out_dir))
    if os.path.isdir(best):
        remove_abandoned(best_path(out_dir))
    latest = latest_checkpoint(out_dir)
    tf_index = os.path.join(directory, "checkpoint")
    if not force and os.path.exists(tf_index):
        raise run_record.RunMismatch(
            f"Cannot resume from {directory!r}: it holds checkpoints of the "
            "TensorFlow trainer, which this backend cannot read. Resume "
            "them with KERAS_BACKEND=tensorflow, or pass `force=True` to "
            "discard them and start over."
        )
    if latest and not force:
        run_record.check_resume(out_dir, record, latest)
        return latest
    if latest:
        logger.warning(
            "Starting over (force=True): discarding the checkpoints in %s.",
            directory,
        )
    run_record.start_fresh(out_dir, record)
    return None
