"""`write_faults`: each library's way of saying "disk full" is recognised,
and atomic writes that hit it name the destination and keep the old file.
"""

import errno
import os

import h5py
import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.training.safe_checkpoint import SafeCheckpointManager
from keras_elmo.utils import atomic as write_faults
from keras_elmo.utils.atomic import atomic_directory
from keras_elmo.utils.atomic import atomic_path
from keras_elmo.utils.atomic import atomic_write


@pytest.mark.parametrize(
    "error, number",
    [
        (OSError(errno.ENOSPC, "No space left on device"), errno.ENOSPC),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), errno.EDQUOT),
        (PermissionError(errno.EACCES, "Permission denied"), errno.EACCES),
        (OSError(errno.EROFS, "Read-only file system"), errno.EROFS),
        # h5py: the errno only in the text.
        (
            RuntimeError(
                "Can't decrement id ref count (unable to extend file "
                "properly, errno = 27, error message = 'File too large')"
            ),
            errno.EFBIG,
        ),
        # TensorFlow: the C library's text in an OpError.
        (
            tf.errors.OutOfRangeError(
                None, None, "/x/ckpt-6_temp/part-0.data; File too large"
            ),
            errno.EFBIG,
        ),
        (
            tf.errors.UnknownError(
                None, None, "/x/sm/variables; No space left on device"
            ),
            errno.ENOSPC,
        ),
    ],
)
def test_storage_faults_are_recognised(error, number):
    assert write_faults.storage_fault(error)[0] == number


def test_a_fault_in_the_chain_is_found_and_others_are_not_faults():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise ValueError("while saving") from inner
    except ValueError as outer:
        assert write_faults.storage_fault(outer)[0] == errno.ENOSPC
    assert write_faults.storage_fault(ValueError("bad shape")) is None
    assert write_faults.storage_fault(FileNotFoundError(2, "gone")) is None


def _fail(number):
    raise OSError(number, os.strerror(number))


@pytest.mark.parametrize(
    "number, meaning",
    [
        (errno.ENOSPC, "the disk is full"),
        (errno.EFBIG, "the file size limit was reached"),
        (errno.EACCES, "permission denied (the directory is not writable)"),
    ],
)
def test_atomic_write_fault_names_the_path_and_keeps_the_old_file(
    tmp_path, number, meaning
):
    path = str(tmp_path / "vocab.txt")
    with open(path, "w") as f:
        f.write("old")
    with pytest.raises(write_faults.WriteFailed) as raised:
        with atomic_write(path) as f:
            f.write("new, half")
            _fail(number)
    message = str(raised.value)
    assert message.startswith(f"Could not write {path!r}: {meaning}")
    assert f"({os.strerror(number)}). {path!r} is unchanged;" in message
    assert raised.value.errno == number and raised.value.filename == path
    assert isinstance(raised.value, OSError)
    with open(path) as f:
        assert f.read() == "old"
    assert os.listdir(tmp_path) == ["vocab.txt"]


def test_a_new_file_that_fails_says_nothing_was_written(tmp_path):
    path = str(tmp_path / "weights.hdf5")
    with pytest.raises(write_faults.WriteFailed) as raised:
        with atomic_path(path):
            _fail(errno.ENOSPC)
    assert f"nothing was written to {path!r}" in str(raised.value)
    assert os.listdir(tmp_path) == []


def test_other_errors_pass_through_unchanged(tmp_path):
    with pytest.raises(KeyError, match="nope"):
        with atomic_path(str(tmp_path / "x")):
            raise KeyError("nope")
    with pytest.raises(ValueError, match="shape"):
        with atomic_directory(str(tmp_path / "d")):
            raise ValueError("shape")
    assert os.listdir(tmp_path) == []


def test_atomic_directory_fault_keeps_the_old_directory(tmp_path):
    path = str(tmp_path / "sm")
    os.makedirs(path)
    with open(os.path.join(path, "saved_model.pb"), "wb") as f:
        f.write(b"old")
    with pytest.raises(write_faults.WriteFailed, match=r"'.*sm' is unchanged"):
        with atomic_directory(path) as tmp:
            with open(os.path.join(tmp, "saved_model.pb"), "wb") as f:
                f.write(b"new")
            _fail(errno.EDQUOT)
    assert os.listdir(tmp_path) == ["sm"]
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        assert f.read() == b"old"


def test_hdf5_fault_text_is_recognised_through_atomic_path(tmp_path):
    path = str(tmp_path / "softmax.hdf5")
    with pytest.raises(write_faults.WriteFailed, match="file size limit"):
        with atomic_path(path) as tmp:
            with h5py.File(tmp, "w") as f:
                f.create_dataset("W", data=np.zeros(3))
            raise RuntimeError("write failed (errno = 27, File too large)")
    assert os.listdir(tmp_path) == []


def test_safe_checkpoint_manager_cleans_up_and_names_the_previous(
    tmp_path, monkeypatch
):
    variable = tf.Variable([1.0, 2.0])
    checkpoint = tf.train.Checkpoint(v=variable)
    directory = str(tmp_path / "checkpoints")
    manager = SafeCheckpointManager(checkpoint, directory, max_to_keep=2)
    first = manager.save(checkpoint_number=3)
    before = sorted(os.listdir(directory))
    original = tf.train.Checkpoint._write

    def failing_write(self, prefix, *args, **kwargs):
        os.makedirs(prefix + "_temp")
        with open(prefix + "_temp/part-0", "w") as f:
            f.write("half")
        raise tf.errors.ResourceExhaustedError(
            None, None, f"{prefix}_temp/part-0; No space left on device"
        )

    monkeypatch.setattr(tf.train.Checkpoint, "_write", failing_write)
    variable.assign([5.0, 6.0])
    with pytest.raises(write_faults.WriteFailed) as raised:
        manager.save(checkpoint_number=6)
    assert str(raised.value) == (
        f"Could not write checkpoint {directory + '/ckpt-6'!r}: the disk is "
        f"full (No space left on device). The previous checkpoint "
        f"{first!r} is intact; free space (or make the directory writable) "
        "and rerun the same command to resume from it."
    )
    assert sorted(os.listdir(directory)) == before
    monkeypatch.setattr(tf.train.Checkpoint, "_write", original)
    fresh = tf.train.Checkpoint(v=tf.Variable([0.0, 0.0]))
    reread = SafeCheckpointManager(fresh, directory, max_to_keep=2)
    assert reread.latest_checkpoint == first
    fresh.restore(reread.latest_checkpoint).assert_consumed()
    np.testing.assert_array_equal(fresh.v.numpy(), [1.0, 2.0])
    # Other errors are not dressed up.
    monkeypatch.setattr(
        tf.train.Checkpoint,
        "_write",
        lambda *a, **k: (_ for _ in ()).throw(ValueError("not a fault")),
    )
    with pytest.raises(ValueError, match="not a fault"):
        manager.save(checkpoint_number=7)


def test_ensure_room_sees_the_file_size_limit_and_free_space(tmp_path):
    import resource

    path = str(tmp_path / "out.hdf5.partial")
    with open(path, "wb") as f:
        f.write(b"x" * 1000)
    write_faults.ensure_room(path, 10_000)  # no limit: fits
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (5000, hard))
    try:
        write_faults.ensure_room(path, 4000)
        with pytest.raises(OSError) as raised:
            write_faults.ensure_room(path, 4001)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert raised.value.errno == errno.EFBIG
    assert "1000 + 4001 bytes over the limit of 5000" in str(raised.value)
    with pytest.raises(OSError) as raised:
        write_faults.ensure_room(path, 1 << 62)
    assert raised.value.errno == errno.ENOSPC
    with pytest.raises(write_faults.WriteFailed, match="the disk is full"):
        with write_faults.guard(path):
            write_faults.ensure_room(path, 1 << 62)
