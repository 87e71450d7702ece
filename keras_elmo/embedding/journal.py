"""`OUTPUT.partial/`: the crash-safe journal of an `embed_file` run.

A folder beside OUTPUT that only ever changes by atomic renames, so a
kill at any instant (SIGKILL, power loss after the fsyncs) leaves one of
a few states, each of which a resumed run accepts:

    manifest.json        the run record (`run_identity.run_record`) and
                         the chunk size; written before any chunk
    chunk-KKKKKKKK.hdf5  chunk K: the datasets of lines
                         [K * chunk_lines, (K + 1) * chunk_lines), with
                         attrs `start`, `count` and the sha256 of the
                         lines' text; written to `.chunk-K...tmp`, closed,
                         fsynced, renamed, the folder fsynced
    assembled.hdf5       the complete output (every line's dataset and
                         `sentence_to_index`, and the manifest's run
                         record as the root attribute `keras_elmo_run`),
                         made from the chunks the same way, before it
                         moves to OUTPUT
    moved.json           the inode, size and mtime of `assembled.hdf5`,
                         written just before it is renamed onto OUTPUT:
                         an OUTPUT with that inode is this run's, finished

Publishing renames `assembled.hdf5` onto OUTPUT (atomic: OUTPUT is the
old file or the complete new one), then renames this folder to a hidden
`.NAME.partial.*.trash` and removes it (a kill there leaves only that
trash, removed by the next run). A temporary `.*.tmp` is never read: a
kill while writing one costs at most that chunk. While a run uses the
folder it holds an exclusive `flock` on it (released by the kernel when
the process dies), so a second run on the same OUTPUT is refused
instead of writing into, or discarding, a journal in use.
"""

import contextlib
import glob
import json
import logging
import os
import shutil
import tempfile

from keras_elmo.utils import atomic as file_modes
from keras_elmo.utils import atomic as write_faults
from keras_elmo.utils.atomic import atomic_write
from keras_elmo.utils.digests import fsync_directory

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
ASSEMBLED = "assembled.hdf5"
MOVED = "moved.json"
FORMAT = "keras-elmo-embed-journal/2"
SENTENCE_TO_INDEX = "sentence_to_index"
START_OVER = "pass `force=True` (without `resume=True`) to start over"


def chunk_name(number):
    return f"chunk-{number:08d}.hdf5"


def _write_committed(path, write):
    """`write(tmp)` then fsync, rename onto `path`, fsync the folder."""
    folder = os.path.dirname(path)
    name = os.path.basename(path)
    fd, tmp = file_modes.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    fsync_directory(folder)


def remove_trash(output_path):
    """Removes what a kill left beside OUTPUT: a journal being made or
    being removed (`.NAME.partial.*.trash`)."""
    folder = os.path.dirname(os.path.abspath(output_path))
    name = glob.escape(os.path.basename(output_path))
    for trash in glob.glob(os.path.join(folder, f".{name}.partial.*.trash")):
        shutil.rmtree(trash, ignore_errors=True)


def _stat_record(path):
    stat = os.stat(path)
    return {
        "inode": stat.st_ino,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
    }


def finished_output(partial, output_path):
    """Whether OUTPUT is the published result of the run in `partial`
    (a kill came after the rename onto OUTPUT, before the clean-up)."""
    moved = os.path.join(partial, MOVED)
    if not (os.path.isfile(moved) and os.path.isfile(output_path)):
        return False
    try:
        with open(moved, encoding="utf-8") as f:
            return json.load(f) == _stat_record(output_path)
    except (OSError, ValueError):
        return False


class JournalInUse(FileExistsError):
    """Another live run holds the journal's lock.

    Attributes:
        pid: int or None, the process holding it (where known).
    """

    def __init__(self, message, pid=None):
        super().__init__(message)
        self.pid = pid


def lock_holder(fd):
    """The pid holding a `flock` on the file open as `fd`, read from
    `/proc/locks` (Linux); None where it cannot be told."""
    stat = os.fstat(fd)
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}"
    try:
        with open("/proc/locks", encoding="ascii") as f:
            lines = f.read().splitlines()
    except (OSError, ValueError):
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue  # another kind, or a waiter ("->")
        major, minor, inode = fields[5].rsplit(":", 2)[-3:]
        if (
            inode == str(stat.st_ino)
            and f"{int(major, 16):02x}:{int(minor, 16):02x}" == device
        ):
            try:
                pid = int(fields[4])
            except ValueError:
                return None
            return pid if pid > 0 else None
    return None


class EmbedJournal:
    """The `.partial` folder of one output: open, resume, commit, publish.

    Args:
        partial: str. The folder (`OUTPUT + ".partial"`).
        record: dict. This run's `run_identity.run_record`.
        chunk_lines: int. Lines per chunk for a new run (a resumed run
            keeps the chunks of the manifest).
    """

    def __init__(self, partial, record, chunk_lines):
        self.partial = partial
        self.record = record
        self.recorded = record  # the manifest's, once opened
        self.chunk_lines = chunk_lines
        self._lock_fd = None
        self.opened = False  # `open` succeeded: the folder is this run's

    def _lock(self):
        """Takes the folder's exclusive lock (POSIX `flock`), once.

        Raises:
            JournalInUse: another live run holds it (named by its pid
                where `/proc/locks` tells it).
        """
        if self._lock_fd is not None:
            return
        try:
            import fcntl
        except ImportError:  # Windows: no advisory locks
            return
        fd = os.open(self.partial, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = lock_holder(fd)
            os.close(fd)
            who = "another run" if holder is None else f"process {holder}"
            raise JournalInUse(
                f"Another run is writing the output: {self.partial!r} is "
                f"being written now by {who} (its lock is held"
                + ("" if holder is None else f" by pid {holder}")
                + "); wait for it to finish (or stop it) before running "
                "again. Nothing was changed.",
                holder,
            ) from e
        self._lock_fd = fd

    def close(self):
        """Releases the lock (the journal stays for a resumed run)."""
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None

    def path(self, name):
        return os.path.join(self.partial, name)

    def open(self, resume, force):
        """Starts a new journal or checks the one an interrupted run left.

        Raises:
            FileExistsError: a journal exists and neither `resume` nor
                `force` says what to do with it.
            ValueError: `resume` and the journal was made by another
                model, input, settings or version (the message names
                which), or is not a journal of this version.
        """
        from keras_elmo.embedding.run_identity import changes

        if os.path.lexists(self.partial) and not resume:
            if os.path.isdir(self.partial):
                self._lock()  # a journal in use is not "interrupted"
            if not force:
                self.close()
                raise FileExistsError(
                    f"An interrupted run left {self.partial!r}; pass "
                    "`resume=True` to continue it or `force=True` to start "
                    "over."
                )
            self._discard()
        if os.path.isdir(self.partial):
            self._lock()
            recorded = self._manifest()
            different = changes(recorded.get("run", {}), self.record)
            if "unverified" in (
                recorded.get("run", {}).get("model", {}).get("kind"),
                self.record["model"]["kind"],
            ):
                different.append(
                    "the model cannot be verified (a runner without an "
                    "`identity`)"
                )
            if different:
                raise ValueError(
                    f"{self.partial!r} was started by another run; changed: "
                    f"{'; '.join(different)}. Its vectors are not mixed "
                    "with another run's: resume with the same model, input "
                    f"and settings, or {START_OVER}."
                )
            self.chunk_lines = int(recorded["chunk_lines"])
            self.recorded = recorded["run"]
            self._remove_temporaries()
            self.opened = True
            return
        if os.path.lexists(self.partial):
            raise ValueError(
                f"{self.partial!r} is a partial output of an earlier "
                "keras_elmo version (one HDF5 file that records neither "
                f"the model nor the input), so it cannot be resumed; "
                f"{START_OVER}."
            )
        # Made complete under a hidden name, then renamed: a journal
        # always has its manifest.
        folder, name = os.path.split(os.path.abspath(self.partial))
        new = file_modes.mkdtemp(
            dir=folder, prefix=f".{name}.", suffix=".trash"
        )
        manifest = {
            "format": FORMAT,
            "run": self.record,
            "chunk_lines": self.chunk_lines,
        }
        with atomic_write(os.path.join(new, MANIFEST)) as f:
            json.dump(manifest, f, indent=1)
        fsync_directory(new)
        os.rename(new, self.partial)
        fsync_directory(folder)
        self._lock()
        self.opened = True

    def _manifest(self):
        try:
            with open(self.path(MANIFEST), encoding="utf-8") as f:
                manifest = json.load(f)
        except (OSError, ValueError):
            manifest = None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise ValueError(
                f"{self.partial!r} has no readable {MANIFEST} of this "
                f"keras_elmo version, so it cannot be resumed; {START_OVER}."
            )
        return manifest

    def _remove_temporaries(self):
        for tmp in glob.glob(os.path.join(glob.escape(self.partial), ".*")):
            os.remove(tmp)

    def _discard(self):
        if os.path.isdir(self.partial):
            self._lock()
            self._trash()
        else:
            os.remove(self.partial)

    def _trash(self):
        folder, name = os.path.split(os.path.abspath(self.partial))
        trash = tempfile.mkdtemp(
            dir=folder, prefix=f".{name}.", suffix=".trash"
        )
        os.replace(self.partial, trash)  # over the empty folder
        fsync_directory(folder)
        self.close()
        shutil.rmtree(trash, ignore_errors=True)

    # --- chunks --------------------------------------------------------

    def committed_chunks(self):
        """The numbers of the chunks committed so far."""
        numbers = []
        for path in glob.glob(os.path.join(glob.escape(self.partial), "*")):
            name = os.path.basename(path)
            if name.startswith("chunk-") and name.endswith(".hdf5"):
                with contextlib.suppress(ValueError):
                    numbers.append(int(name[len("chunk-") : -len(".hdf5")]))
        return sorted(numbers)

    def has_chunk(self, number, start, count, digest):
        """Whether chunk `number` is committed for these lines."""
        import h5py

        path = self.path(chunk_name(number))
        if not os.path.isfile(path):
            return False
        try:
            with h5py.File(path, "r") as f:
                found = (
                    int(f.attrs["start"]),
                    int(f.attrs["count"]),
                    str(f.attrs["sha256"]),
                    len(f),
                )
        except (OSError, KeyError, ValueError):
            found = None
        if found == (start, count, digest, count):
            return True
        logger.warning("Recomputing %s (it does not match the input).", path)
        os.remove(path)
        return False

    def commit_chunk(self, number, start, digest, arrays):
        """Writes chunk `number` (`arrays`: line index -> float32 array)."""
        import h5py

        def write(tmp):
            with h5py.File(tmp, "w") as f:
                for index in sorted(arrays):
                    f.create_dataset(
                        str(index), data=arrays[index], dtype="float32"
                    )
                f.attrs["start"] = start
                f.attrs["count"] = len(arrays)
                f.attrs["sha256"] = digest

        size = sum(a.size * 4 + 1024 for a in arrays.values()) + (64 << 10)
        write_faults.ensure_room(self.path(chunk_name(number)), size)
        _write_committed(self.path(chunk_name(number)), write)

    # --- the end -------------------------------------------------------

    def assemble(self, total, index_json):
        """Writes `assembled.hdf5` from the chunks (unless it exists),
        with the manifest's run record (`run_identity.RUN_ATTRIBUTE`)."""
        import h5py

        from keras_elmo.embedding.run_identity import set_run_attribute

        target = self.path(ASSEMBLED)
        if os.path.isfile(target):
            return
        numbers = range(-(-total // self.chunk_lines))
        chunks = [self.path(chunk_name(k)) for k in numbers]
        size = sum(os.path.getsize(p) for p in chunks) + 2 * len(index_json)
        write_faults.ensure_room(target, size + (64 << 10))

        def write(tmp):
            with h5py.File(tmp, "w") as out:
                for path in chunks:
                    with h5py.File(path, "r") as chunk:
                        for key in sorted(chunk, key=int):
                            out.create_dataset(
                                key, data=chunk[key][()], dtype="float32"
                            )
                index = out.create_dataset(
                    SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype("utf-8")
                )
                index[0] = index_json
                set_run_attribute(out, self.recorded)

        _write_committed(target, write)

    def publish(self, output_path):
        """Renames `assembled.hdf5` onto OUTPUT and removes the journal."""
        if not finished_output(self.partial, output_path):
            with atomic_write(self.path(MOVED)) as f:
                json.dump(_stat_record(self.path(ASSEMBLED)), f)
            os.replace(self.path(ASSEMBLED), output_path)
            fsync_directory(os.path.dirname(os.path.abspath(output_path)))
        self._trash()
