"""`SafeCheckpointManager`: a checkpoint save that fails for lack of
space or permission says so, cleans up and keeps the previous checkpoint.

TensorFlow writes a checkpoint `ckpt-N` into `ckpt-N_temp/`, then moves
its files into place, and rewrites the `checkpoint` index file last (by
rename); a failure part-way therefore leaves the index pointing at the
previous checkpoint, which stays readable. What it also leaves is the
half-written `ckpt-N_temp/` (or `ckpt-N.*` files no index names) and an
error that names the temporary file. This manager removes those leftovers
and raises `write_faults.WriteFailed` naming the checkpoint, the reason
and the checkpoint a rerun of the same command resumes from.

A checkpoint number saved a second time (the epoch-end checkpoint at the
step of a periodic one; the best checkpoint of an epoch re-run after a
resume) is first dropped from the index (`_forget`): TensorFlow would
otherwise rename the new data file over the old one and then rewrite the
index in place, and a kill in between leaves the newest checkpoint
unreadable ("Checksum does not match"), so the run could not resume.
"""

import glob
import os
import shutil

import tensorflow as tf

from keras_elmo.utils import atomic as write_faults


class SafeCheckpointManager(tf.train.CheckpointManager):
    """`tf.train.CheckpointManager` whose `save` reports storage faults.

    A disk-full, quota, file-size-limit or permission failure raises
    `write_faults.WriteFailed` (an `OSError`); any other error is raised
    unchanged. Arguments are those of `tf.train.CheckpointManager`.
    """

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        previous = self.latest_checkpoint
        try:
            if checkpoint_number is not None:
                self._forget(f"{self._prefix}-{int(checkpoint_number)}")
                previous = self.latest_checkpoint
            return super().save(
                checkpoint_number=checkpoint_number,
                check_interval=check_interval,
                options=options,
            )
        except Exception as e:
            fault = write_faults.storage_fault(e)
            if fault is None:
                raise
            number, meaning = fault
            target = self._failed_prefix(checkpoint_number)
            self._remove_leftovers(target, previous)
            if previous:
                kept = (
                    f"The previous checkpoint {previous!r} is intact; "
                    "free space (or make the directory writable) and "
                    "rerun the same command to resume from it"
                )
            else:
                kept = (
                    "No earlier checkpoint exists; free space (or make the "
                    "directory writable) and rerun the same command"
                )
            raise write_faults.WriteFailed(
                f"Could not write checkpoint {target!r}: {meaning} "
                f"({os.strerror(number)}). {kept}.",
                number,
                target,
            ) from e

    def _forget(self, prefix):
        """Removes checkpoint `prefix` from the index (rewritten atomically,
        naming the previous checkpoint as the newest), then its files. A
        kill in between leaves files no index names, which the next save
        of `prefix` or `remove_unindexed` removes. (`_maybe_delete`,
        `_latest_checkpoint` and `_record_state` are the base class's
        bookkeeping of the kept checkpoints, oldest first.)"""
        files = glob.glob(glob.escape(prefix) + ".*")
        if prefix not in self._maybe_delete and not files:
            return
        self._maybe_delete.pop(prefix, None)
        kept = list(self._maybe_delete)
        self._latest_checkpoint = kept[-1] if kept else None
        if kept:
            self._record_state()
        else:
            index = os.path.join(self.directory, "checkpoint")
            if os.path.exists(index):
                os.remove(index)
        for path in files:
            os.remove(path)

    def remove_unindexed(self):
        """Removes what killed saves left in the directory: temporary
        shard folders, temporary index files and checkpoint files that no
        index names (never a kept checkpoint)."""
        if not os.path.isdir(self.directory):
            return
        kept = set(self._maybe_delete)
        for entry in os.listdir(self.directory):
            path = os.path.join(self.directory, entry)
            prefix = os.path.join(self.directory, entry.split(".")[0])
            if entry.endswith("_temp") and entry.startswith("ckpt-"):
                shutil.rmtree(path, ignore_errors=True)
            elif entry.startswith("checkpoint.tmp") or (
                entry.startswith("ckpt-") and prefix not in kept
            ):
                try:
                    os.remove(path)
                except OSError:  # best effort (a read-only folder)
                    pass

    def _failed_prefix(self, checkpoint_number):
        if checkpoint_number is None:
            checkpoint_number = int(self._checkpoint.save_counter.numpy())
        prefix = getattr(self, "_prefix", os.path.join(self.directory, "ckpt"))
        return f"{prefix}-{int(checkpoint_number)}"

    def _remove_leftovers(self, prefix, previous):
        """Removes the failed save's temporary directory and any of its
        files that no index names (never `previous` or a kept one)."""
        keep = set(self.checkpoints) | {previous}
        for path in glob.glob(glob.escape(prefix) + "_temp*"):
            shutil.rmtree(path, ignore_errors=True)
        if prefix in keep:
            return
        for path in glob.glob(glob.escape(prefix) + ".*"):
            try:
                os.remove(path)
            except OSError:
                pass
