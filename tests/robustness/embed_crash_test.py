"""Crash injection for `embed_file`: a SIGKILL at every write point.

The run (7 lines, 2-line chunks, the tiny reference weights) passes N
write points (`tests.robustness.crash_points`); for each k in 1..N a
forked child runs it and is killed just before point k. Then:

- an OUTPUT that exists is complete and equal, dataset for dataset and
  bit for bit, to an uninterrupted run's (nothing claims completeness
  before it is complete);
- a plain rerun (no `resume`, no `force`) refuses to touch what is left;
- `resume=True`, with the real model, finishes and equals the
  uninterrupted run, having recomputed at most the chunk in flight;
- nothing is left beside OUTPUT.

The same is done for a resumed run killed at each of its own points
(after a first kill in the middle of the first run). The child replays
the uninterrupted run's vectors (it must not run TensorFlow after the
fork) under the real runner's identity, so the parent's resume also
checks that the identity of the model is stable.
"""

import os
import shutil
import tempfile

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo.embedding import hdf5_output as hdf5_embedding
from keras_elmo.embedding.embedder import BiLMEmbedder
from tests.robustness.crash_points import count_points
from tests.robustness.crash_points import killed_at

pytestmark = [
    pytest.mark.crash_sweep,
    pytest.mark.skipif(
        not hasattr(os, "fork"), reason="crash injection forks (POSIX only)"
    ),
]

LINES = [
    "The cat sat on the mat .",
    "Hello",
    "",
    "ELMo gives each token a vector",
    "a b",
    "naïve café , déjà vu",
    "one two three four",
]
BATCH = 2  # with CHUNK_BATCHES = 1: 2-line chunks, 4 chunks
LOG = {"path": None}


class ReplayRunner:
    """Returns the vectors the reference run computed, under the real
    runner's identity; no TensorFlow."""

    max_tokens = None

    def __init__(self, real, reference_path):
        self.identity = real.identity
        self.num_layers = real.num_layers
        self.output_dim = real.output_dim
        self.vectors = {}
        with h5py.File(reference_path, "r") as f:
            for i, line in enumerate(LINES):
                key = tuple(t.encode() for t in line.split())
                self.vectors[key] = f[str(i)][()]

    def __call__(self, token_lists):
        return [self.vectors[tuple(tokens)] for tokens in token_lists]


def _logged_embed_chunk(real):
    def embed_chunk(embedder, todo, mode, batch_size, out):
        if LOG["path"]:
            fd = os.open(LOG["path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, "".join(f"{i}\n" for i, _ in todo).encode())
            os.close(fd)
        return real(embedder, todo, mode, batch_size, out)

    return embed_chunk


def _read_log(path):
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {int(line) for line in f}


def _arrays(path):
    with h5py.File(path, "r") as f:
        return {
            k: (f[k][()] if k != "sentence_to_index" else f[k][0]) for k in f
        }, dict(f.attrs)


def _assert_same(path, reference):
    (got, got_attrs), (want, want_attrs) = _arrays(path), reference
    assert sorted(got) == sorted(want)
    # The run record (the journal's manifest) and nothing else.
    assert sorted(want_attrs) == ["keras_elmo_run"]
    assert got_attrs == want_attrs
    for key in want:
        if key == "sentence_to_index":
            assert got[key] == want[key]
        else:
            assert got[key].dtype == np.float32
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)


@pytest.fixture(scope="module")
def setup(reference_weights, tmp_path_factory):
    options, weights = reference_weights("tiny")
    real = BiLMEmbedder(keras_elmo.BiLM.from_allennlp(options, weights))
    folder = tmp_path_factory.mktemp("embed_crash")
    source = str(folder / "lines.txt")
    with open(source, "w", encoding="utf-8") as f:
        f.write("\n".join(LINES) + "\n")
    reference = str(folder / "reference.hdf5")
    mp = pytest.MonkeyPatch()
    mp.setattr(hdf5_embedding, "CHUNK_BATCHES", 1)
    mp.setattr(
        hdf5_embedding,
        "_embed_chunk",
        _logged_embed_chunk(hdf5_embedding._embed_chunk),
    )
    hdf5_embedding.embed_file(real, source, reference, batch_size=BATCH)
    yield real, ReplayRunner(real, reference), source, _arrays(reference)
    mp.undo()


@pytest.fixture
def workdir(tmp_path):
    """A folder in memory (/dev/shm) where there is one: a kill leaves
    the same files there as on a disk, and hundreds of fsyncs cost
    nothing, which keeps the sweeps fast on a busy machine."""
    if not os.path.isdir("/dev/shm"):
        yield str(tmp_path)
        return
    folder = tempfile.mkdtemp(prefix="embed_crash_", dir="/dev/shm")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _run(runner, source, out, resume):
    return hdf5_embedding.embed_file(
        runner, source, out, batch_size=BATCH, resume=resume
    )


def _check_after_kill(real, source, out, reference, started):
    """The checks of the module docstring; returns the recomputed lines."""
    partial = out + hdf5_embedding.PARTIAL_SUFFIX
    if os.path.exists(out):
        _assert_same(out, reference)
    if os.path.lexists(out) or os.path.lexists(partial):
        with pytest.raises(FileExistsError, match="force=True"):
            _run(real, source, out, resume=False)
    LOG["path"] = out + ".resume.log"
    try:
        if os.path.exists(out) and not os.path.lexists(partial):
            with pytest.raises(FileExistsError):  # finished: nothing to do
                _run(real, source, out, resume=True)
        else:
            assert _run(real, source, out, resume=True) == len(LINES)
    finally:
        LOG["path"] = None
    _assert_same(out, reference)
    folder = os.path.dirname(out)
    name = os.path.basename(out)
    assert [n for n in os.listdir(folder) if name in n and "log" not in n] == [
        name
    ]
    recomputed = started & _read_log(out + ".resume.log")
    assert len({i // BATCH for i in recomputed}) <= 1, recomputed
    return recomputed


def _sweep(real, replay, source, reference, folder, prepare):
    """Kills the run at each write point; returns the number of points."""
    out = os.path.join(folder, "count", "vectors.hdf5")
    os.makedirs(os.path.dirname(out))
    resume = prepare(out)
    points = count_points(lambda: _run(replay, source, out, resume))
    _assert_same(out, reference)
    for k in range(1, len(points) + 1):
        out = os.path.join(folder, f"k{k}", "vectors.hdf5")
        os.makedirs(os.path.dirname(out))
        resume = prepare(out)
        LOG["path"] = out + ".child.log"
        started = _read_log(LOG["path"])
        try:
            killed = killed_at(k, lambda: _run(replay, source, out, resume))
        finally:
            LOG["path"] = None
        assert killed, f"point {k} of {len(points)} ({points[k - 1]})"
        started |= _read_log(out + ".child.log")
        _check_after_kill(real, source, out, reference, started)
    return points


def test_a_kill_at_every_write_point_of_embed(setup, workdir):
    real, replay, source, reference = setup
    points = _sweep(real, replay, source, reference, workdir, lambda out: False)
    # mkdir, manifest, 4 chunks, assembly, publish: each a few points.
    assert len(points) >= 40, points
    assert points.count("os.replace") >= 8  # manifest, chunks, output, ...
    print(f"embed: {len(points)} kill points")


def test_a_kill_at_every_write_point_of_a_resumed_embed(setup, workdir):
    real, replay, source, reference = setup
    first = []

    def interrupted_once(out):
        if not first:
            first.extend(count_points(lambda: _run(replay, source, out, False)))
            os.remove(out)
            hdf5_embedding.embed_journal.remove_trash(out)
        # Killed in the middle of the first run, before the 3rd chunk.
        k = next(
            i
            for i, name in enumerate(first, 1)
            if name == "os.replace" and i > len(first) // 2
        )
        LOG["path"] = out + ".child.log"
        try:
            assert killed_at(k, lambda: _run(replay, source, out, False))
        finally:
            LOG["path"] = None
        return True

    points = _sweep(real, replay, source, reference, workdir, interrupted_once)
    assert len(points) >= 20, points
    print(f"resumed embed: {len(points)} kill points")


def test_a_journal_in_use_is_neither_resumed_nor_discarded(setup, tmp_path):
    import fcntl

    real, replay, source, reference = setup
    out = str(tmp_path / "vectors.hdf5")
    points = count_points(lambda: _run(replay, source, out, False))
    os.remove(out)
    assert killed_at(len(points) // 2, lambda: _run(replay, source, out, False))
    partial = out + hdf5_embedding.PARTIAL_SUFFIX
    before = sorted(os.listdir(partial))
    fd = os.open(partial, os.O_RDONLY)  # another run holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for force in (False, True):
            with pytest.raises(FileExistsError, match="Another run is writ"):
                hdf5_embedding.embed_file(
                    real, source, out, batch_size=BATCH, resume=not force,
                    force=force,
                )  # fmt: skip
        assert sorted(os.listdir(partial)) == before
    finally:
        os.close(fd)
    assert _run(real, source, out, resume=True) == len(LINES)
    _assert_same(out, reference)
