"""Disk full and permission faults: checkpoint, vocab, embed and export
writes that fail part-way end with an error naming the path and a
non-zero exit, leave the earlier checkpoint or output intact, and a rerun
once the fault is gone resumes.

No-space is simulated with `RLIMIT_FSIZE` in the child (`EFBIG`), a
read-only directory with `chmod 555` (as root, the child also drops
`CAP_DAC_OVERRIDE`); see `write_fault_helpers`.
"""

import json
import os

import numpy as np
import pytest

from tests.robustness.write_fault_helpers import leftovers
from tests.robustness.write_fault_helpers import read_only_dir
from tests.robustness.write_fault_helpers import run_cli_with_faults
from tests.robustness.write_fault_helpers import tree_digest
from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import hdf5_arrays
from tests.training.training_helpers import run_cli
from tests.training.training_helpers import tiny_train_args

# Below the tiny model's 1.25 MB checkpoint data file, above every other
# file a training epoch writes before its checkpoint.
CHECKPOINT_FSIZE = 600_000
FILE_TOO_LARGE = "the file size limit was reached (see `ulimit -f`)"
READ_ONLY = "permission denied (the directory is not writable)"


@pytest.fixture(scope="module")
def sample_vocab(tmp_path_factory):
    from keras_elmo.data.vocabulary import Vocabulary

    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    Vocabulary.build(TRAIN, min_count=2).save(path)
    return str(path)


def train_args(vocab, out, epochs):
    return [
        "-v",
        *tiny_train_args(
            vocab,
            out,
            "--epochs",
            str(epochs),
            "--steps-per-epoch",
            "3",
            "--batch-size",
            "8",
            "--deterministic",
        ),
    ]


@pytest.mark.large
def test_checkpoint_faults_keep_the_last_checkpoint_and_resume(
    sample_vocab, tmp_path
):
    out = str(tmp_path / "run")
    checkpoints = os.path.join(out, "checkpoints")
    # The optimizer state is kept, so that epoch 2 can continue the run.
    first = run_cli(*train_args(sample_vocab, out, 1), "--keep-optimizer-state")
    assert first.returncode == 0, first.stderr
    before = tree_digest(out, skip=("logs", "history.json"))
    assert "checkpoints/ckpt-3.index" in before

    # No space: the epoch-2 checkpoint cannot be written.
    full = run_cli_with_faults(
        *train_args(sample_vocab, out, 2), fsize=CHECKPOINT_FSIZE
    )
    assert full.returncode == 2, full.stderr
    error = full.stderr.strip().splitlines()[-1]
    assert error == (
        "keras-elmo train: error: Could not write checkpoint "
        f"{os.path.join(checkpoints, 'ckpt-6')!r}: {FILE_TOO_LARGE} (File "
        "too large). The previous checkpoint "
        f"{os.path.join(checkpoints, 'ckpt-3')!r} is intact; free space "
        "(or make the directory writable) and rerun the same command to "
        "resume from it."
    )
    assert tree_digest(out, skip=("logs", "history.json")) == before
    assert leftovers(out) == []

    # A read-only checkpoint directory: the same, with its own reason.
    with read_only_dir(checkpoints):
        denied = run_cli_with_faults(
            *train_args(sample_vocab, out, 2), read_only=True
        )
    assert denied.returncode == 2, denied.stderr
    assert f"{os.path.join(checkpoints, 'ckpt-6')!r}: {READ_ONLY}" in (
        denied.stderr
    )
    assert "'ckpt-3' is intact" not in denied.stderr  # the full path is
    assert f"{os.path.join(checkpoints, 'ckpt-3')!r} is intact" in (
        denied.stderr
    )
    assert tree_digest(out, skip=("logs", "history.json")) == before
    assert leftovers(out) == []

    # Space again: the same command resumes from ckpt-3 and finishes.
    resumed = run_cli(*train_args(sample_vocab, out, 2))
    assert resumed.returncode == 0, resumed.stderr
    assert f"Resumed from {os.path.join(checkpoints, 'ckpt-3')}" in (
        resumed.stderr
    )
    with open(os.path.join(out, "history.json")) as f:
        assert [h["epoch"] for h in json.load(f)] == [1, 2]
    assert os.path.exists(os.path.join(checkpoints, "ckpt-6.index"))


def _vocab_corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    words = [f"word{i}" for i in range(3000)]
    path.write_text(" ".join(words) + "\n" + " ".join(words) + "\n")
    return str(path)


@pytest.mark.large
def test_vocab_write_faults_keep_the_old_file(tmp_path):
    corpus = _vocab_corpus(tmp_path)
    folder = tmp_path / "out"
    folder.mkdir()
    target = str(folder / "vocab.txt")
    with open(target, "w") as f:
        f.write("<S>\n</S>\n<UNK>\nold\n")
    args = ("vocab", corpus, "-o", target, "--force")
    full = run_cli_with_faults(*args, fsize=4096)
    assert full.returncode == 2, full.stderr
    assert full.stderr.strip().splitlines()[-1] == (
        f"keras-elmo vocab: error: Could not write {target!r}: "
        f"{FILE_TOO_LARGE} (File too large). {target!r} is unchanged; free "
        "space (or make the directory writable) and rerun the same command."
    )
    with read_only_dir(str(folder)):
        denied = run_cli_with_faults(*args, read_only=True)
    assert denied.returncode == 2, denied.stderr
    assert f"Could not write {target!r}: {READ_ONLY}" in denied.stderr
    with open(target) as f:
        assert f.read() == "<S>\n</S>\n<UNK>\nold\n"
    assert os.listdir(folder) == ["vocab.txt"]
    done = run_cli_with_faults(*args)
    assert done.returncode == 0, done.stderr
    with open(target) as f:
        assert len(f.read().split()) == 3003


def _embed_args(input_path, output, model_dir, *flags):
    return (
        "embed",
        input_path,
        output,
        "--top",
        "--model",
        model_dir,
        "--batch-size",
        "4",
        *flags,
    )


@pytest.mark.large
def test_embed_faults_keep_the_old_output_and_resume(tmp_path, model_dir):
    source = tmp_path / "lines.txt"
    lines = [" ".join(["the cat a b"] * (1 + i % 7)) for i in range(400)]
    source.write_text("\n".join(lines) + "\n")
    output = str(tmp_path / "vectors.hdf5")
    reference = str(tmp_path / "reference.hdf5")
    done = run_cli(*_embed_args(source, reference, model_dir))
    assert done.returncode == 0, done.stderr

    with open(output, "wb") as f:
        f.write(b"previous output")
    full = run_cli_with_faults(
        *_embed_args(source, output, model_dir, "--force"), fsize=400_000
    )
    assert full.returncode == 2, full.stderr
    partial = output + ".partial"
    # (after the progress bar, on its line)
    assert (
        full.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"keras-elmo embed: error: Could not write {partial!r}: "
            f"{FILE_TOO_LARGE} (File too large). {output!r} is unchanged, the "
            f"lines embedded so far stay in {partial!r}; free space (or make "
            "the directory writable) and rerun with --resume to continue, or "
            "--force to start over."
        )
    )
    with open(output, "rb") as f:
        assert f.read() == b"previous output"

    # A read-only output directory: refused before anything is written.
    folder = tmp_path / "read_only"
    folder.mkdir()
    locked = str(folder / "vectors.hdf5")
    with open(locked, "wb") as f:
        f.write(b"previous output")
    with read_only_dir(str(folder)):
        denied = run_cli_with_faults(
            *_embed_args(source, locked, model_dir, "--force"), read_only=True
        )
    assert denied.returncode == 2, denied.stderr
    assert (
        f"keras-elmo embed: error: Could not write {locked + '.partial'!r}: "
        f"{READ_ONLY} (Permission denied). {locked!r} is unchanged"
    ) in denied.stderr
    assert os.listdir(folder) == ["vectors.hdf5"]
    with open(locked, "rb") as f:
        assert f.read() == b"previous output"

    resumed = run_cli(
        *_embed_args(source, output, model_dir, "--force", "--resume")
    )
    assert resumed.returncode == 0, resumed.stderr
    assert not os.path.exists(partial)
    got, expected = hdf5_arrays(output), hdf5_arrays(reference)
    assert sorted(got) == sorted(expected) and len(got) == 401
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)


@pytest.mark.large
def test_export_faults_keep_the_old_saved_model(tmp_path, model_dir):
    out = str(tmp_path / "sm")
    args = ("export", "--model", model_dir, "--out", out)
    first = run_cli(*args)
    assert first.returncode == 0, first.stderr
    before = tree_digest(out)
    full = run_cli_with_faults(*args, "--force", fsize=100_000)
    assert full.returncode == 2, full.stderr
    assert (
        full.stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"keras-elmo export: error: Could not write {out!r}: "
            f"{FILE_TOO_LARGE} (File too large). {out!r} is unchanged"
        )
    )
    assert tree_digest(out) == before
    assert leftovers(str(tmp_path)) == []
    assert sorted(os.listdir(tmp_path)) == ["sm"]
    with read_only_dir(str(tmp_path)):
        denied = run_cli_with_faults(*args, "--force", read_only=True)
    assert denied.returncode == 2, denied.stderr
    assert (
        denied.stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"keras-elmo export: error: Could not write {out!r}: {READ_ONLY} "
            f"(Permission denied). {out!r} is unchanged"
        )
    )
    assert tree_digest(out) == before
    assert sorted(os.listdir(tmp_path)) == ["sm"]
    done = run_cli(*args, "--force")
    assert done.returncode == 0, done.stderr
