"""The trainer's per-step callbacks: when they act and what they write."""

import glob
import types

import numpy as np
import tensorflow as tf

from keras_elmo.training.step_callbacks import StepCheckpoints
from keras_elmo.training.step_callbacks import StepProgress
from keras_elmo.training.step_callbacks import StepSummaries
from keras_elmo.training.step_callbacks import step_callbacks


class FakeManager:
    def __init__(self):
        self.saved = []

    def save(self, checkpoint_number):
        self.saved.append(checkpoint_number)


def config(**kwargs):
    fields = dict(verbose=False, steps_per_epoch=None, log_every=3)
    fields.update(checkpoint_every=4)
    fields.update(kwargs)
    return types.SimpleNamespace(**fields)


def run_steps(callbacks, steps, first_step=1):
    """Steps `first_step..steps` as the trainer reports them (the loss of
    step `s` is `s / 10`, its norm `s`, its rate `100 s`)."""
    callbacks.on_epoch_begin(0)
    for done, step in enumerate(range(first_step, steps + 1), start=1):
        logs = {"step": step, "loss": step / 10, "gradient_norm": step}
        logs["tokens_per_second"] = 100.0 * step
        callbacks.on_train_batch_end(done, logs)
    callbacks.on_epoch_end(0)


def read_scalars(log_dir):
    """`{tag: [(step, value)]}` of every event file under `log_dir`."""
    scalars = {}
    for path in sorted(glob.glob(f"{log_dir}/events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                number = float(tf.make_ndarray(value.tensor))
                scalars.setdefault(value.tag, []).append((event.step, number))
    return scalars


def test_checkpoints_every_n_steps_numbered_by_step():
    manager = FakeManager()
    run_steps(step_callbacks(config(), True, None, manager), steps=13)
    assert manager.saved == [4, 8, 12]
    # Resumed mid-epoch at global step 6: still multiples of 4.
    manager = FakeManager()
    run_steps(
        step_callbacks(config(), True, None, manager), steps=13, first_step=7
    )
    assert manager.saved == [8, 12]


def test_summaries_every_log_every_steps(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    run_steps(step_callbacks(config(), True, writer, FakeManager()), steps=7)
    writer.flush()
    scalars = read_scalars(tmp_path)
    assert sorted(scalars) == [
        "gradient_norm",
        "loss",
        "perplexity",
        "tokens_per_second",
    ]
    assert [s for s, _ in scalars["loss"]] == [3, 6]
    np.testing.assert_allclose(
        [v for _, v in scalars["loss"]], [0.3, 0.6], rtol=1e-6
    )
    np.testing.assert_allclose(
        [v for _, v in scalars["perplexity"]], np.exp([0.3, 0.6]), rtol=1e-6
    )
    assert [v for _, v in scalars["gradient_norm"]] == [3.0, 6.0]
    assert [v for _, v in scalars["tokens_per_second"]] == [300.0, 600.0]


def test_progress_bar_only_when_verbose_on_the_chief(capsys):
    kinds = [
        [
            type(c)
            for c in step_callbacks(config(**kw), chief, w, None).callbacks
        ]
        for kw, chief, w in [
            ({"verbose": True}, True, "writer"),
            ({"verbose": True}, False, None),
            ({}, True, None),
        ]
    ]
    assert kinds == [
        [StepProgress, StepSummaries, StepCheckpoints],
        [StepCheckpoints],
        [StepCheckpoints],
    ]
    run_steps(
        step_callbacks(
            config(verbose=True, steps_per_epoch=5), True, None, FakeManager()
        ),
        steps=5,
    )
    out = capsys.readouterr().out
    assert "5/5" in out and "ppl" in out and "tokens/s" in out
