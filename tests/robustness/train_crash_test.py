"""Crash injection for `train`: a SIGKILL at the write points of a run.

The run: a biLM smaller than the tiny preset (one biLSTM layer of 8
units), on 64 sentences (validation: 16), batch 4, 3 steps per epoch, 2
epochs, a checkpoint every 2 steps (so at steps 2, 3 (epoch end), 4, 6
and 6 again (epoch end)) keeping 2, a best checkpoint per improving
epoch, `deterministic`. It passes 155 write points
(`tests.robustness.crash_points`, TensorFlow's included: `run.json`,
each checkpoint's shards, merge, index and sweep, the best checkpoint,
`history.json`, the outputs). A child forked from a zygote
(`crash_points.Zygote`) runs it and is SIGKILLed just before point k,
or, "torn", just after a merge with its index cut as a kill inside the
merge would leave it. Then:

- every final output that exists (options.json, weights.hdf5,
  softmax.hdf5, vocab.txt, bilm.keras) equals the uninterrupted run's,
  and `history.json`, if any, holds a prefix of its epochs with the same
  steps, loss and perplexity (nothing claims more than is complete);
- the work lost is at most one checkpoint interval: the last step the
  child applied minus the step of the checkpoint a resume finds is at
  most `checkpoint_every`;
- the same command, rerun, finishes and its outputs and history equal
  the uninterrupted run's, with nothing left beside them.

Kill points tried by default (`crash_sweeps.points_to_try`, the first
and last of each publishing kind): 12 plain and 2
torn; `KERAS_ELMO_CRASH_SWEEP=full` tries all 155 (and every
`TEARABLE` point torn). The counts are printed and checked below.
"""

import gzip
import json
import os
import shutil

import pytest

from tests.robustness import crash_sweeps
from tests.robustness.crash_points import TEARABLE
from tests.robustness.crash_points import Zygote
from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import VALID

pytestmark = [
    pytest.mark.large,
    pytest.mark.crash_sweep,
    pytest.mark.skipif(
        not hasattr(os, "fork"), reason="crash injection forks (POSIX only)"
    ),
]

CHECKPOINT_EVERY = 2
OUTPUTS = ("options.json", "weights.hdf5", "softmax.hdf5", "vocab.txt")
KERAS = "bilm.keras"
# Torn by default: the merges (the first checkpoint's, and the epoch-end
# one that saves a step's number again); all of TEARABLE in a full sweep.
TORN = TEARABLE if crash_sweeps.FULL else {"gen_io_ops.merge_v2_checkpoints"}
HISTORY_KEYS = ("epoch", "steps", "loss", "perplexity", "learning_rate")


def train_work(out, train, valid, vocab, model, log):
    """The run (in a zygote child); logs each applied step to `log`
    before its step callbacks (and so its checkpoint) run. The step runs
    eagerly: tracing it is most of a run this small, and what is tested
    is the writing. Validation is traced: its 25 batches of 4 pieces
    cost more eagerly (5.4 s of CPU a run) than traced (3.7 s); both
    the reference and every killed or resumed run validate so."""
    import tensorflow as tf

    from keras_elmo.training import step_callbacks
    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.trainer import TrainingLoop
    from keras_elmo.training.training_config import TrainingConfig

    real = step_callbacks.StepCheckpoints.on_train_batch_end
    validate = TrainingLoop._validate

    def logged(self, batch, logs=None):
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{int(logs['step'])}\n".encode())
        os.close(fd)
        real(self, batch, logs)

    def traced(self, epoch):
        tf.config.run_functions_eagerly(False)
        try:
            return validate(self, epoch)
        finally:
            tf.config.run_functions_eagerly(True)

    step_callbacks.StepCheckpoints.on_train_batch_end = logged
    TrainingLoop._validate = traced
    tf.config.run_functions_eagerly(True)
    config = TrainingConfig(
        train=train,
        valid=valid,
        vocab=vocab,
        out_dir=out,
        model=model,
        epochs=2,
        batch_size=4,
        steps_per_epoch=3,
        checkpoint_every=CHECKPOINT_EVERY,
        keep_checkpoints=2,
        max_tokens=6,
        shuffle_buffer=64,
        deterministic=True,
        verbose=False,
    )
    Trainer(config).train()


def _lines(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [next(f) for _ in range(n)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from keras_elmo.config import BiLMConfig
    from keras_elmo.data.vocabulary import Vocabulary

    folder = tmp_path_factory.mktemp("train_crash")
    files = {}
    for name, source, n in (("train", TRAIN, 64), ("valid", VALID, 16)):
        files[name] = str(folder / f"{name}.txt")
        with open(files[name], "w", encoding="utf-8") as f:
            f.writelines(_lines(source, n))
    files["vocab"] = str(folder / "vocab.txt")
    Vocabulary.build(files["train"], min_count=1).save(files["vocab"])
    # Smaller than the tiny preset: one biLSTM layer of 8 units.
    micro = BiLMConfig(
        filters=((1, 4), (2, 4)),
        char_embedding_dim=4,
        num_highway_layers=1,
        projection_dim=8,
        lstm_units=8,
        num_layers=1,
    )
    files["model"] = str(folder / "options.json")
    with open(files["model"], "w") as f:
        json.dump(micro.to_options_dict(), f)
    with Zygote(["keras_elmo.training.trainer", __name__]) as zygote:
        yield zygote, files, folder


def _kwargs(files, out):
    return dict(files, out=out, log=out + ".steps")


def _steps(log):
    if not os.path.exists(log):
        return 0
    with open(log) as f:
        return max((int(line) for line in f), default=0)


def _history(out):
    path = os.path.join(out, "history.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return [{k: h[k] for k in HISTORY_KEYS} for h in json.load(f)]


def _latest_step(out):
    import tensorflow as tf

    latest = tf.train.latest_checkpoint(os.path.join(out, "checkpoints"))
    return int(latest.rsplit("-", 1)[1]) if latest else 0


def _check_claims(out, reference):
    """Every output present equals the reference; the history is a
    prefix of the reference's."""
    for name in OUTPUTS + (KERAS,):
        path = os.path.join(out, name)
        if os.path.exists(path):
            crash_sweeps.assert_same_file(path, os.path.join(reference, name))
    history = _history(out)
    if history is not None:
        assert history == _history(reference)[: len(history)]


def _expected_tree(reference):
    """The files the uninterrupted run leaves (TensorBoard's event files,
    named by time and host, as a count)."""
    names = crash_sweeps.tree(reference)
    logs = [n for n in names if "tfevents" in n]
    return [n for n in names if "tfevents" not in n], len(logs)


def _check_resumed(out, reference):
    for name in OUTPUTS + (KERAS,):
        crash_sweeps.assert_same_file(
            os.path.join(out, name), os.path.join(reference, name)
        )
    assert _history(out) == _history(reference)
    names = crash_sweeps.tree(out)
    expected, _ = _expected_tree(reference)
    assert [n for n in names if "tfevents" not in n] == expected


def _sweep(zygote, files, folder, torn):
    reference = str(folder / "reference")
    if not os.path.exists(reference):
        killed, points = zygote.run(
            f"{__name__}:train_work", _kwargs(files, reference)
        )
        assert not killed
        (folder / "points.json").write_text(json.dumps(points))
    points = json.loads((folder / "points.json").read_text())
    names = TORN if torn else None
    tried = crash_sweeps.points_to_try(points, names=names)
    for k in tried:
        out = str(folder / f"{'torn' if torn else 'k'}{k}" / "run")
        kwargs = _kwargs(files, out)
        killed, _ = zygote.run(f"{__name__}:train_work", kwargs, k=k, torn=torn)
        where = f"point {k} of {len(points)} ({points[k - 1]})"
        assert killed, where
        _check_claims(out, reference)
        lost = _steps(kwargs["log"]) - _latest_step(out)
        assert 0 <= lost <= CHECKPOINT_EVERY, (where, lost)
        killed, _ = zygote.run(f"{__name__}:train_work", kwargs)
        assert not killed
        _check_resumed(out, reference)
        shutil.rmtree(os.path.dirname(out))
    return points, tried


def test_a_kill_at_each_write_point_of_train(setup):
    zygote, files, folder = setup
    points, tried = _sweep(zygote, files, folder, torn=False)
    print(f"train: {len(tried)} of {len(points)} kill points")
    assert len(points) >= 100, points
    for name in ("io_ops.save_v2", "gen_io_ops.merge_v2_checkpoints"):
        assert points.count(name) >= 6, name  # 5 checkpoints, 2 best
    assert len(tried) == len(points) or len(tried) >= 10


def test_a_torn_write_inside_each_tensorflow_write_of_train(setup):
    zygote, files, folder = setup
    points, tried = _sweep(zygote, files, folder, torn=True)
    print(f"train, torn: {len(tried)} kill points")
    assert len(tried) >= 2, tried
