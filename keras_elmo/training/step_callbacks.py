"""What the trainer does after each step, as Keras callbacks.

`Trainer` runs its own loop (see `keras_elmo.training.trainer`), and
hands each applied step to a `keras.callbacks.CallbackList` of these:

- `StepProgress`: progress over the epoch's steps on stdout (loss,
  perplexity, tokens/s), plain lines when redirected;
- `StepSummaries`: TensorBoard scalars every `log_every` steps;
- `StepCheckpoints`: a checkpoint every `checkpoint_every` steps.

`on_train_batch_end(batch, logs)` gets `batch`, the batches of the epoch
done so far (skipped ones included), and `logs` with `step` (the global
step just applied, 1-based), `loss` (the step's mean cross entropy of both
directions), `gradient_norm` and `tokens_per_second` (the epoch's mean so
far). None of them is `async_safe`, so Keras runs them in order, on the
loop's thread, before the next step: a checkpoint holds exactly the state
after its step.
"""

import sys
import time

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.utils.progress import progress_bar


def step_callbacks(config, chief, writer, manager):
    """The trainer's `keras.callbacks.CallbackList` for one epoch.

    A progress bar when `config.verbose` on the chief, TensorBoard scalars
    when there is a `writer` (the chief's), and periodic checkpoints of
    `manager` (a `tf.train.CheckpointManager`). The checkpoint callback is
    always there, so the list is never empty (an empty `CallbackList`
    would dispatch asynchronously to an executor it never started).
    """
    callbacks = []
    if config.verbose and chief:
        callbacks.append(StepProgress(config.steps_per_epoch))
    if writer is not None:
        callbacks.append(StepSummaries(writer, config.log_every))
    callbacks.append(StepCheckpoints(manager, config.checkpoint_every))
    return keras.callbacks.CallbackList(callbacks)


class StepProgress(keras.callbacks.Callback):
    """Progress over `target` steps (None: unknown) for each epoch, on
    `stream` (default stdout, where Keras' `fit` draws its bar), through
    `utils.progress.progress_bar`: Keras' bar on a terminal, whole lines
    with no escape codes in a redirected log. It shows the step's loss,
    its perplexity `exp(loss)` and tokens per second."""

    def __init__(self, target, stream=None):
        super().__init__()
        self.target = target
        self.stream = stream
        self.bar = None

    def on_epoch_begin(self, epoch, logs=None):
        self.bar = progress_bar(self.target, "step", self.stream or sys.stdout)

    def on_train_batch_end(self, batch, logs=None):
        loss = float(logs["loss"])
        self.bar.update(
            batch,
            [
                ("loss", loss),
                ("ppl", float(np.exp(loss))),
                ("tokens/s", float(logs["tokens_per_second"])),
            ],
        )


class EveryNSteps(keras.callbacks.Callback):
    """Calls `at_step(step, logs)` after every `every`-th global step."""

    def __init__(self, every):
        super().__init__()
        self.every = every

    def on_train_batch_end(self, batch, logs=None):
        step = int(logs["step"])
        if step % self.every == 0:
            self.at_step(step, logs)


class StepSummaries(EveryNSteps):
    """TensorBoard scalars (`loss`, `perplexity`, `gradient_norm`,
    `tokens_per_second`) to `writer` at every `log_every`-th step."""

    def __init__(self, writer, log_every):
        super().__init__(log_every)
        self.writer = writer

    def at_step(self, step, logs):
        with self.writer.as_default(step=step):
            tf.summary.scalar("loss", logs["loss"])
            tf.summary.scalar("perplexity", np.exp(logs["loss"]))
            tf.summary.scalar("gradient_norm", logs["gradient_norm"])
            tf.summary.scalar("tokens_per_second", logs["tokens_per_second"])


class StepCheckpoints(EveryNSteps):
    """Saves `manager` (a `tf.train.CheckpointManager`) at every
    `checkpoint_every`-th step, numbered by the step."""

    def __init__(self, manager, checkpoint_every):
        super().__init__(checkpoint_every)
        self.manager = manager

    def at_step(self, step, logs):
        self.manager.save(checkpoint_number=step)


def step_logs(step, loss, norm, tokens, start):
    """The logs both trainers pass to `on_train_batch_end` after a step:
    the step number, its loss and gradient norm, and the forward tokens
    per second since `start` (a `time.perf_counter()` value)."""
    rate = tokens / max(time.perf_counter() - start, 1e-9)
    return {
        "step": step,
        "loss": loss,
        "gradient_norm": norm,
        "tokens_per_second": rate,
    }
