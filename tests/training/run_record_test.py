"""A resumed `train` refuses checkpoints of another run, by name.

One tiny run (2 steps, a checkpoint after each) is trained once; each
test copies its folder and resumes it with one thing changed: the corpus
(content), the vocabulary, the architecture, a setting, the package
version, or the record missing (checkpoint format 1). Each is refused
with an error naming exactly what changed; `force=True` starts over.
"""

import dataclasses
import gzip
import json
import os
import re
import shutil

import pytest
import tensorflow as tf

from keras_elmo.config import BiLMConfig
from keras_elmo.training import checkpoints
from keras_elmo.training.trainer import Trainer
from keras_elmo.training.training_config import TrainingConfig
from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import run_cli
from tests.training.training_helpers import tiny_train_args


def _config(train, vocab, out, **changes):
    settings = dict(
        train=train,
        vocab=vocab,
        out_dir=out,
        model="tiny",
        batch_size=8,
        steps_per_epoch=2,
        checkpoint_every=1,
        shuffle_buffer=64,
        verbose=False,
        # The run's checkpoints as a resume finds them (a finished run
        # keeps only its last one, without the optimizer, otherwise).
        keep_optimizer_state=True,
    )
    settings.update(changes)
    return TrainingConfig(**settings)


@pytest.fixture(scope="module")
def trained(sample_vocab, tmp_path_factory):
    folder = tmp_path_factory.mktemp("run_record")
    train = str(folder / "train.txt.gz")
    shutil.copy(TRAIN, train)
    config = _config(train, sample_vocab, str(folder / "run"))
    Trainer(config).train()
    return config


@pytest.fixture
def run(trained, tmp_path):
    """A copy of the trained run folder and of its corpus, and the config
    that resumes it."""
    out = str(tmp_path / "run")
    shutil.copytree(trained.out_dir, out)
    train = str(tmp_path / "train.txt.gz")
    shutil.copy(trained.train, train)
    return dataclasses.replace(trained, out_dir=out, train=train)


def _prepare(config, force=False, verify=True):
    model = BiLMConfig.from_architecture(config.model)
    record = checkpoints.run_record(config, model)
    return checkpoints.prepare_run(config.out_dir, record, force, True, verify)


@pytest.mark.large
def test_the_same_run_resumes_and_a_touched_corpus_too(run):
    latest = os.path.join(run.out_dir, "checkpoints", "ckpt-2")
    assert _prepare(run) == latest
    os.utime(run.train, ns=(1, 1))  # same bytes, another mtime
    assert _prepare(run) == latest
    moved = run.train + ".moved.gz"
    os.rename(run.train, moved)
    assert _prepare(dataclasses.replace(run, train=moved)) == latest


def _edited_corpus(config):
    with gzip.open(config.train, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    words = lines[0].split()
    lines[0] = " ".join([words[-1]] + words[:-1])  # same tokens, reordered
    with gzip.open(config.train, "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return config


def _other_vocabulary(config):
    path = config.out_dir + ".vocab.txt"
    with open(config.vocab, encoding="utf-8") as f:
        words = f.read().splitlines()
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(words[:-1]) + "\n")
    return dataclasses.replace(config, vocab=path)


CHANGES = {
    "corpus": (_edited_corpus, r"the corpus `train` \(content: 1 file"),
    "vocabulary": (_other_vocabulary, r"the vocabulary `vocab` \(sha256 "),
    "architecture": (
        lambda c: dataclasses.replace(c, model="small"),
        r"the architecture `model` \(",
    ),
    "setting": (
        lambda c: dataclasses.replace(c, dropout=0.25),
        r"`dropout` \(0\.1 -> 0\.25\)",
    ),
    "validation corpus": (
        lambda c: dataclasses.replace(c, valid=c.train),
        r"the corpus `valid` \(content: none -> 1 file",
    ),
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_a_resume_with_one_thing_changed_is_refused_naming_it(run, what):
    change, expected = CHANGES[what]
    changed = change(run)
    if what == "validation corpus":
        changed = dataclasses.replace(changed, lr_schedule="epoch")
    with pytest.raises(checkpoints.RunMismatch) as caught:
        _prepare(changed)
    message = str(caught.value)
    assert "ckpt-2" in message and "`force=True`" in message
    changed_part = message.split("changed: ")[1].split(". Rerun")[0]
    assert re.match(expected, changed_part), changed_part
    # Exactly one difference is named (the validation corpus also
    # changes `lr_schedule`, set explicitly above to the same value).
    assert changed_part.count(" -> ") == 1, changed_part
    latest = os.path.join(run.out_dir, "checkpoints", "ckpt-2")
    assert tf.train.latest_checkpoint(os.path.dirname(latest)) == latest
    # A reader of the checkpoint (evaluate, snapshot) may skip the check.
    assert _prepare(changed, verify=False) == latest


def test_a_missing_newest_checkpoint_is_refused_not_discarded(run):
    folder = os.path.join(run.out_dir, "checkpoints")
    for name in os.listdir(folder):
        if name.startswith("ckpt-2."):
            os.remove(os.path.join(folder, name))
    with pytest.raises(checkpoints.RunMismatch, match="files are missing"):
        _prepare(run)
    assert os.path.exists(os.path.join(folder, "ckpt-1.index"))
    assert _prepare(run, force=True) is None
    assert not os.path.exists(folder)


def test_another_version_is_refused(run, monkeypatch):
    monkeypatch.setattr(checkpoints, "__version__", "9.9.9")
    with pytest.raises(checkpoints.RunMismatch, match=r"version \('0\.1\.0'"):
        _prepare(run)


@pytest.mark.large
def test_a_format_1_folder_is_refused_by_name_and_force_starts_over(run):
    """A run folder without `run.json`, as every keras_elmo before
    checkpoint format 2 left it: its `TrainingState` also lacked the
    epoch's loss totals, so TensorFlow's restore failed with an
    `AssertionError` about "2 Python objects that were not bound"; now
    the run is refused before any restore, naming the format."""
    os.remove(os.path.join(run.out_dir, "run.json"))
    with pytest.raises(checkpoints.RunMismatch, match="format 1") as caught:
        Trainer(run)
    assert "`force=True`" in str(caught.value)
    trainer = Trainer(run, force=True)
    assert trainer.resumed_from is None
    assert int(trainer.state.step.numpy()) == 0
    assert not os.path.exists(os.path.join(run.out_dir, "checkpoints"))
    assert not os.path.exists(os.path.join(run.out_dir, "history.json"))
    with open(os.path.join(run.out_dir, "run.json")) as f:
        assert json.load(f)["format"] == checkpoints.CHECKPOINT_FORMAT
    history = trainer.train()
    assert [h["epoch"] for h in history] == [1]
    assert sorted(os.listdir(os.path.join(run.out_dir, "checkpoints"))) == [
        "checkpoint",
        "ckpt-1.data-00000-of-00001",
        "ckpt-1.index",
        "ckpt-2.data-00000-of-00001",
        "ckpt-2.index",
    ]


@pytest.mark.large
def test_the_command_line_names_the_flags(run):
    args = tiny_train_args(
        run.vocab,
        run.out_dir,
        "--batch-size",
        "8",
        "--steps-per-epoch",
        "2",
        "--checkpoint-every",
        "1",
        "--shuffle-buffer",
        "64",
        "--dropout",
        "0.25",
        "--skip-corpus-check",
    )
    args[args.index("--train") + 1] = run.train
    done = run_cli(*args)
    assert done.returncode == 2, done.stderr
    assert "`--dropout` (0.1 -> 0.25)" in done.stderr, done.stderr
    assert "pass --force to discard" in done.stderr, done.stderr
    assert "force=True" not in done.stderr
