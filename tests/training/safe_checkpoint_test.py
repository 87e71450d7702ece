"""`SafeCheckpointManager`: a checkpoint number saved again, killed in
TensorFlow's merge, leaves the previous checkpoint as the newest; what
killed saves leave behind is removed.

The kill is emulated in this process: the merge op runs, its index is cut
to half (as a kill while TensorFlow writes it leaves it), and a
`BaseException` stops the save there, so nothing after it runs, as after
a SIGKILL. (`tests/robustness/train_crash_test.py` does the same with
real kills of a training run.)
"""

import os

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.ops import gen_io_ops

from keras_elmo.training.safe_checkpoint import SafeCheckpointManager


class Killed(BaseException):
    pass


def _manager(directory, value):
    variable = tf.Variable(np.float32(value))
    checkpoint = tf.train.Checkpoint(v=variable)
    return SafeCheckpointManager(checkpoint, directory, max_to_keep=3), variable


def _killed_in_merge(monkeypatch):
    real = gen_io_ops.merge_v2_checkpoints

    def merge(checkpoint_prefixes, destination_prefix, **kwargs):
        real(checkpoint_prefixes, destination_prefix, **kwargs)
        index = destination_prefix.numpy().decode() + ".index"
        with open(index, "r+b") as f:
            f.truncate(os.path.getsize(index) // 2)
        raise Killed()

    monkeypatch.setattr(gen_io_ops, "merge_v2_checkpoints", merge)


@pytest.mark.parametrize("first", [True, False])
def test_a_number_saved_again_and_killed_keeps_the_previous(
    tmp_path, monkeypatch, first
):
    directory = str(tmp_path / "checkpoints")
    manager, variable = _manager(directory, 1.0)
    if not first:
        manager.save(checkpoint_number=4)
    variable.assign(2.0)
    manager.save(checkpoint_number=6)  # the periodic checkpoint
    variable.assign(3.0)
    _killed_in_merge(monkeypatch)
    with pytest.raises(Killed):
        manager.save(checkpoint_number=6)  # the epoch-end one, same step
    monkeypatch.undo()

    resumed, restored = _manager(directory, 0.0)
    if first:
        # Nothing left to resume: the run starts over, having lost one
        # checkpoint interval.
        assert resumed.latest_checkpoint is None
    else:
        assert resumed.latest_checkpoint == os.path.join(directory, "ckpt-4")
        resumed.checkpoint.restore(resumed.latest_checkpoint)
        assert float(restored.numpy()) == 1.0
    resumed.remove_unindexed()
    expected = ["ckpt-4.data-00000-of-00001", "ckpt-4.index"]
    expected = [] if first else ["checkpoint"] + expected
    assert sorted(os.listdir(directory)) == expected
    restored.assign(3.0)
    assert resumed.save(checkpoint_number=6).endswith("ckpt-6")
    again, value = _manager(directory, 0.0)
    again.checkpoint.restore(again.latest_checkpoint)
    assert float(value.numpy()) == 3.0


def test_leftovers_of_killed_saves_are_removed_and_kept_ones_stay(tmp_path):
    directory = str(tmp_path / "checkpoints")
    manager, variable = _manager(directory, 1.0)
    manager.save(checkpoint_number=2)
    kept = sorted(os.listdir(directory))
    for name in (
        "ckpt-4_temp/part-00000-of-00001.data-00000-of-00001",
        "ckpt-4.data-00000-of-00001",
        "checkpoint.tmp0123abcd",
    ):
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"torn")
    _manager(directory, 0.0)[0].remove_unindexed()
    assert sorted(os.listdir(directory)) == kept
