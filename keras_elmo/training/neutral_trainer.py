"""`NeutralTrainer`: the training loop's JAX and PyTorch parts, one process.

`trainer.TrainingLoop` runs the epochs, validation, early stopping and
outputs; this class supplies what differs from TensorFlow. The model,
optimizer and dropout seed states live as arrays between steps, which the
stateless step of `steps` (`make_jax_step`, one `jax.jit` function;
`make_torch_step`, eager autograd) maps to their next values, with the
loss of the `losses` definition. Checkpoints hold them with the position
(epoch, batch in epoch, step, the epoch's running totals, the learning
rate and the validation rules' state), every `checkpoint_every` steps and
at each epoch's end, in the one format of every backend
(`checkpoints.CheckpointStore`): a rerun resumes mid-epoch on the same
batches and ends with the same weights as an uninterrupted run, and a run
stopped on TensorFlow resumes here (or the other way round) with the
weights and optimizer slots of the step it stopped at. With several
local JAX devices and a batch they divide, the model is built under
`keras.distribution.DataParallel` (variables replicated, batch rows
split). Batches are padded to a few
time lengths (`pad_steps`), so `jax.jit` compiles a few step shapes.
On JAX each batch also brings two static bounds (`static_bounds`): its
distinct tokens and its longest token's characters, each rounded up, so
the step's char CNN embeds each distinct token once over the slots that
can hold characters, as TensorFlow's step does, for a few more shapes.
Settings that need TensorFlow are refused by name
(`training_config.training_refusals`).
"""

import logging

import keras
import numpy as np

from keras_elmo.text import char_vocab
from keras_elmo.training import checkpoints
from keras_elmo.training.distributed_data import epoch_batches
from keras_elmo.training.step_callbacks import StepProgress
from keras_elmo.training.steps import make_stateless_step
from keras_elmo.training.trainer import EpochHistory
from keras_elmo.training.trainer import TrainingDiverged
from keras_elmo.training.trainer import TrainingLoop
from keras_elmo.training.trainer import finished_model
from keras_elmo.training.training_config import NEUTRAL_TRAINING_BACKENDS
from keras_elmo.training.training_config import check_training_backend

logger = logging.getLogger(__name__)

# The time axis of a batch is padded to a multiple of this many tokens
# (all-zero char ids, target -1: masked), so a corpus of varied lengths
# compiles a few step shapes, not one per sentence length.
PAD_STEPS_TO = 16
# The JAX step embeds a batch's distinct tokens only, `jnp.unique` with a
# static size: the bound is rounded up to a multiple of this many rows, so
# a corpus compiles a few step shapes (`distinct_rows_bound`).
DISTINCT_ROWS_TO = 256
# ... and convolves the slots its longest token can fill, that bound
# rounded up to a multiple of this many characters (`static_bounds`).
CHARS_TO = 16
_PAD_ID = char_vocab.PAD_CHAR + char_vocab.ID_OFFSET


class NeutralTrainer(TrainingLoop):
    """`trainer.TrainingLoop` on JAX and PyTorch: variable values between
    steps, the stateless step, the checkpoints of every backend.

    The same loop, `TrainingConfig`, outputs and resume rule (`run.json`)
    as `keras_elmo.training.trainer.Trainer` (TensorFlow); see the module
    docstring for the step.

    Args:
        config: `keras_elmo.training.TrainingConfig`. Settings that need
            TensorFlow (`strategy` mirrored / multi_worker,
            `mixed_precision`, `sampler="unique"` with a sampled
            softmax) raise `ValueError` naming them.
        force: bool. Start over, discarding the checkpoints in
            `config.out_dir`; else a resume of another run's checkpoints
            raises `checkpoints.RunMismatch` naming what differs.
        callbacks: list of `keras.callbacks.Callback`, called after each
            applied step (`on_train_batch_end(batch, logs)`, the logs of
            `Trainer`: step, loss, gradient_norm, tokens_per_second),
            after that step's checkpoint.
    """

    def __init__(self, config, force=False, callbacks=None):
        import tensorflow as tf

        self.config = config
        backend = keras.config.backend()
        if backend not in NEUTRAL_TRAINING_BACKENDS:
            raise ValueError(
                f"NeutralTrainer trains on {NEUTRAL_TRAINING_BACKENDS} "
                f"only; received KERAS_BACKEND={backend} (on TensorFlow "
                "use keras_elmo.training.trainer.Trainer)."
            )
        check_training_backend(config, backend)
        if config.deterministic:
            logger.info(
                "`deterministic`: nothing to switch on; the %s CPU step is "
                "deterministic.",
                backend,
            )
        keras.utils.set_random_seed(config.seed)
        tf.random.set_seed(config.seed)  # the tf.data shuffle's
        self.distribution = (
            data_parallel(config.batch_size) if backend == "jax" else None
        )
        self._build(self.distribution and self.distribution.scope())
        record = checkpoints.run_record(config, self.model_config)
        checkpoints.prepare_run(config.out_dir, record, force)
        self.state = checkpoints.TrainingState(config.learning_rate)
        self.store, self.best_store = checkpoints.make_stores(
            self.model,
            self.optimizer,
            self.state,
            tf.Variable(1.0, trainable=False),  # no loss scaling here
            config.out_dir,
            None,
            keep=config.keep_checkpoints,
        )
        restored = self.store.restore()
        self.position = self._read_state()
        if restored:
            logger.info(
                "Resumed from %s: epoch %d, batch %d, step %d",
                restored,
                self.position["epoch"],
                self.position["batch_in_epoch"],
                self.position["step"],
            )
        self.resumed_from = restored
        self._check_continuable(
            self.position["epoch"], self.position["stopped"]
        )
        self.history = EpochHistory(config.out_dir, self.position["epoch"])
        # A rerun of a finished run: `train` then changes nothing.
        self.finished = finished_model(
            config.out_dir,
            self.position["epoch"],
            config.epochs,
            restored and restored + ".index",
            stopped=self.position["stopped"],
        )
        self.callbacks = list(callbacks or [])
        self._read_variables()
        self._step = make_stateless_step(backend)(
            self.config, self.model, self.optimizer
        )

    # --- state -----------------------------------------------------------

    def _read_variables(self):
        self.trainable = [v.value for v in self.model.trainable_variables]
        self.non_trainable = [
            v.value for v in self.model.non_trainable_variables
        ]
        self.optimizer_values = [v.value for v in self.optimizer.variables]

    def _write_variables(self):
        pairs = [
            (self.model.trainable_variables, self.trainable),
            (self.model.non_trainable_variables, self.non_trainable),
            (self.optimizer.variables, self.optimizer_values),
        ]
        for variables, values in pairs:
            for variable, value in zip(variables, values):
                variable.assign(value)

    def _read_state(self):
        """The position held in `self.state` (restored or initial)."""
        state = self.state
        return {
            "step": int(state.step.numpy()),
            "epoch": int(state.epoch.numpy()),
            "batch_in_epoch": int(state.batch_in_epoch.numpy()),
            "epoch_sums": np.array(state.epoch_sums.numpy()),
            "epoch_counts": np.array(state.epoch_counts.numpy()),
            "learning_rate": float(state.learning_rate.numpy()),
            "best_valid": float(state.best_valid.numpy()),
            "epochs_without_gain": int(state.epochs_without_gain.numpy()),
            "stopped": bool(state.stopped.numpy()),
        }

    def save_checkpoint(self):
        """Writes the current state as checkpoint `ckpt-<step>`
        (`checkpoints.CheckpointStore`, the format of every backend)."""
        self._write_variables()
        for name, value in self.position.items():
            getattr(self.state, name).assign(value)
        return self.store.save(checkpoint_number=self.position["step"])

    # --- the loop's parts -------------------------------------------------

    def _position(self, name):
        return self.position[name]

    def _begin_training(self):
        callbacks = list(self.callbacks)
        if self.config.verbose:
            callbacks.append(StepProgress(self.config.steps_per_epoch))
        # `on_train_begin` starts the executor of callbacks Keras may run
        # asynchronously (those that only read the logs).
        self._callbacks = keras.callbacks.CallbackList(callbacks)
        self._callbacks.on_train_begin()

    def _end_training(self):
        self._callbacks.on_train_end()

    def _begin_epoch(self, epoch):
        if self.config.lr_schedule == "plateau":
            rate = self.position["learning_rate"]  # the rules' decision
        else:
            rate = self.config.learning_rate_at(epoch)
        self._set_learning_rate(rate)
        return rate

    def _epoch_callbacks(self):
        return self._callbacks

    def _epoch_totals(self, skip):
        if not skip:
            return np.zeros(2), np.zeros(2)
        position = self.position
        return np.array(position["epoch_sums"]), np.array(
            position["epoch_counts"]
        )

    def _steps(self, epoch, skip):
        seed = self.config.seed
        for batch, bounds in self._batches(epoch, skip):
            step = self.position["step"]
            outputs = self._step(
                self.trainable,
                self.non_trainable,
                self.optimizer_values,
                *batch,
                np.array([seed, 2 * step], np.uint32),
                **bounds,
            )
            s, c, norm = (
                np.asarray(keras.ops.convert_to_numpy(x), np.float64)
                for x in outputs[3:]
            )
            yield s, c, norm, outputs[:3]

    def _accept_step(self, loss, norm, values, step, epoch, batch):
        if not (np.isfinite(loss) and np.isfinite(norm)):
            raise TrainingDiverged(
                f"Training diverged at step {step} (epoch {epoch + 1}, "
                f"batch {batch}): loss {loss}, gradient norm "
                f"{float(norm)}. Its update was not applied and nothing "
                "was saved; the last checkpoint in "
                f"{self.store.directory} is intact."
            )
        self.trainable, self.non_trainable, self.optimizer_values = values
        return True

    def _record_step(self, step, batch, sums, counts):
        self.position.update(
            step=step,
            batch_in_epoch=batch,
            epoch_sums=np.array(sums),
            epoch_counts=np.array(counts),
        )
        if step % self.config.checkpoint_every == 0:
            self.save_checkpoint()

    def _end_epoch(self):
        self.position.update(
            epoch=self.position["epoch"] + 1,
            batch_in_epoch=0,
            epoch_sums=np.zeros(2),
            epoch_counts=np.zeros(2),
        )
        self.save_checkpoint()

    def _sync_model(self):
        self._write_variables()

    def _store(self):
        return self.store

    def _apply_rules(self, perplexity):
        position = self.position
        names = (
            "best_valid",
            "epochs_without_gain",
            "stopped",
            "learning_rate",
        )
        decisions, after = self.rules.decide(
            {k: position[k] for k in names}, perplexity
        )
        position.update(after)
        return decisions

    def _save_best(self, epoch):
        self.best_store.save(checkpoint_number=epoch)

    def restore_best(self):
        """Loads the best-validation weights, if a validation set chose
        one; returns that epoch (1-based) or None, as
        `Trainer.restore_best`."""
        if not self.config.valid:
            return None
        epoch = checkpoints.restore_best(self.best_store)
        if epoch is not None:
            self._read_variables()
        return epoch

    def _batches(self, epoch, skip):
        dataset = epoch_batches(self.config, self.vocabulary, epoch).skip(skip)
        jax = keras.config.backend() == "jax"
        for features, targets in dataset.as_numpy_iterator():
            batch = pad_steps(
                features["char_ids"], targets["forward"], targets["backward"]
            )
            bounds = static_bounds(batch[0]) if jax else {}
            yield self._on_devices(batch), bounds

    def _on_devices(self, arrays):
        distribution = self.distribution
        if distribution is None:
            return arrays
        rows = arrays[0].shape[0]
        if rows % len(distribution.device_mesh.devices.flatten()):
            return arrays  # a final partial batch: one device
        return tuple(
            keras.distribution.distribute_tensor(
                a, distribution.get_data_layout(a.shape)
            )
            for a in arrays
        )

    def _set_learning_rate(self, rate):
        self._write_variables()
        self.optimizer.learning_rate = rate
        self._read_variables()
        self.position["learning_rate"] = rate


def pad_steps(char_ids, forward, backward, multiple=PAD_STEPS_TO):
    """Pads the time axis of a batch to a multiple of `multiple`:
    `char_ids` `[B, T, 50]` with zeros (padding tokens), the targets
    `[B, T + 1]` with -1 (ignored by the loss)."""
    steps = char_ids.shape[1]
    extra = -steps % multiple
    if not extra:
        return char_ids, forward, backward
    char_ids = np.pad(char_ids, ((0, 0), (0, extra), (0, 0)))
    pad = ((0, 0), (0, extra))
    forward = np.pad(forward, pad, constant_values=-1)
    backward = np.pad(backward, pad, constant_values=-1)
    return char_ids, forward, backward


def static_bounds(char_ids, rows_to=DISTINCT_ROWS_TO, chars_to=CHARS_TO):
    """The static bounds the JAX step compiles for, of a batch `char_ids`
    `[B, T, 50]` (`steps.make_loss_fn`): `distinct_rows`
    (`distinct_rows_bound`) and `longest_token`, the most characters
    (BOW, bytes, EOW: ids neither 0 nor PAD) of a token, rounded up to a
    multiple of `chars_to` (`<S>` and `</S>` hold 3)."""
    characters = (char_ids > 0) & (char_ids != _PAD_ID)
    longest = max(int(characters.sum(axis=-1).max(initial=0)), 3)
    return {
        "distinct_rows": distinct_rows_bound(char_ids, rows_to),
        "longest_token": -(-longest // chars_to) * chars_to,
    }


def distinct_rows_bound(char_ids, multiple=DISTINCT_ROWS_TO):
    """The static bound on distinct char-id rows the JAX step compiles
    for (`UniqueTokens.distinct_rows`): the batch's distinct rows `[B, T,
    50]`, plus 3 for `<S>`, `</S>` and the all-zero row the model adds,
    rounded up to a multiple of `multiple`, and at most the `B (T + 2) + 1`
    rows the model can hold. Never below the count, which `jnp.unique`
    would truncate."""
    rows, steps, width = char_ids.shape
    flat = np.ascontiguousarray(char_ids.reshape(-1, width))
    keys = flat.view(np.dtype((np.void, flat.dtype.itemsize * width)))
    count = len(np.unique(keys)) + 3
    return min(-(-count // multiple) * multiple, rows * (steps + 2) + 1)


def data_parallel(batch_size):
    """`keras.distribution.DataParallel` over the local devices when
    there are several and they divide `batch_size`, else None."""
    devices = keras.distribution.list_devices()
    if len(devices) < 2 or batch_size % len(devices):
        return None
    logger.info("DataParallel over %d devices.", len(devices))
    return keras.distribution.DataParallel(devices=devices)
