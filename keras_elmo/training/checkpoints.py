"""Checkpoints: what is saved, where each worker writes, atomic outputs."""

import logging
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

from keras_elmo.training.safe_checkpoint import SafeCheckpointManager

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
    from keras_elmo.training.strategy import is_chief

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
