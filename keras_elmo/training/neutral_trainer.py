"""`NeutralTrainer`: biLM training on JAX and PyTorch, resumable, one process.

The loss of `Trainer` (TensorFlow), written in `keras.ops`
(`losses`): per step,

    loss = 0.5 * (sum CE_fwd / N_fwd + sum CE_bwd / N_bwd)

over the batch's real tokens, full softmax or sampled with replacement;
its gradient is clipped by the global norm and applied by the Keras
optimizer in one step (`steps.make_jax_step`, compiled;
`steps.make_torch_step`, eager). The
model, optimizer and dropout seed states live as arrays between steps;
checkpoints (`neutral_checkpoints`) hold them with the position (epoch,
batch in epoch, step) and the epoch's running totals, every
`checkpoint_every` steps and at each epoch's end, so a rerun resumes
mid-epoch on the same batches and ends with the same weights as an
uninterrupted run. With several local JAX devices and a batch they
divide, the model is built under `keras.distribution.DataParallel`
(variables replicated, batch rows split). The sampled softmax's
candidates are drawn from the seed `[seed, 2 * step + direction]`, so a
resumed run draws the same ones. With a validation set, each epoch
ends with its perplexity (`evaluate.evaluate_model`, the `losses`
definition) and the decisions of `ValidationRules.decide` (best weights
in `OUT/best/best.npz`, plateau decay, early stopping), kept in the
checkpointed position; `init_from` loads its weights before any resume.
Settings that need TensorFlow are refused by name (`backend_limits`).
"""

import logging
import time

import keras
import numpy as np

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm_language_model import BiLMLanguageModel
from keras_elmo.training import neutral_checkpoints
from keras_elmo.training.backend_limits import NEUTRAL_TRAINING_BACKENDS
from keras_elmo.training.backend_limits import check_training_backend
from keras_elmo.training.distributed_data import epoch_batches
from keras_elmo.training.history import EpochHistory
from keras_elmo.training.history import epoch_result
from keras_elmo.training.init_from import load_init_from
from keras_elmo.training.init_from import resolve_model_config
from keras_elmo.training.losses import check_sampler_fits
from keras_elmo.training.optimizer import make_optimizer
from keras_elmo.training.step_callbacks import StepProgress
from keras_elmo.training.step_callbacks import step_logs
from keras_elmo.training.steps import make_stateless_step
from keras_elmo.training.trained_model import write_trained_model
from keras_elmo.training.trainer import TrainingDiverged
from keras_elmo.training.validation_rules import ValidationRules

logger = logging.getLogger(__name__)

# The time axis of a batch is padded to a multiple of this many tokens
# (all-zero char ids, target -1: masked), so a corpus of varied lengths
# compiles a few step shapes, not one per sentence length.
PAD_STEPS_TO = 16


class NeutralTrainer:
    """Builds the language model and runs the JAX or PyTorch training loop.

    The counterpart of `keras_elmo.training.trainer.Trainer` for
    `KERAS_BACKEND=jax` and `torch`, with the same `TrainingConfig`, outputs and
    resume rule (`run.json`); see the module docstring for the step.

    Args:
        config: `keras_elmo.training.TrainingConfig`. Settings that need
            TensorFlow (`strategy` mirrored / multi_worker,
            `mixed_precision`, `sampler="unique"` with a sampled
            softmax) raise `ValueError` naming them.
        force: bool. Start over, discarding the checkpoints in
            `config.out_dir`; else a resume of another run's checkpoints
            raises `run_record.RunMismatch` naming what differs.
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
        self.vocabulary = Vocabulary.load(config.vocab)
        vocabulary_size = len(self.vocabulary)
        check_sampler_fits(config, vocabulary_size)
        if config.deterministic:
            logger.info(
                "`deterministic`: nothing to switch on; the %s CPU step is "
                "deterministic.",
                backend,
            )
        keras.utils.set_random_seed(config.seed)
        tf.random.set_seed(config.seed)  # the tf.data shuffle's
        self.model_config = resolve_model_config(config)
        self.distribution = (
            data_parallel(config.batch_size) if backend == "jax" else None
        )
        with _scope(self.distribution):
            backbone = BiLM(self.model_config, dropout=config.dropout)
            self.model = BiLMLanguageModel(
                backbone, vocabulary_size, dropout=config.dropout
            )
            self.optimizer = make_optimizer(
                config.optimizer, config.learning_rate
            )
            self.optimizer.build(self.model.trainable_variables)
        if config.init_from:
            load_init_from(self.model, vocabulary_size, config.init_from)
        self.rules = ValidationRules(config)
        record = neutral_checkpoints.neutral_record(config, self.model_config)
        restored = neutral_checkpoints.prepare_run(
            config.out_dir, record, force
        )
        self.position = {
            "step": 0,
            "epoch": 0,
            "batch_in_epoch": 0,
            "epoch_sums": np.zeros(2),
            "epoch_counts": np.zeros(2),
            "learning_rate": config.learning_rate,
            **neutral_checkpoints.NO_VALIDATION_YET,
        }
        if restored:
            self._restore(restored)
        self.resumed_from = restored
        self.history = EpochHistory(config.out_dir, self.position["epoch"])
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

    def _shapes(self):
        return (
            [tuple(v.shape) for v in self.model.variables],
            [tuple(v.shape) for v in self.optimizer.variables],
        )

    def _restore(self, path):
        model, optimizer, position = neutral_checkpoints.load(
            path, self._shapes()
        )
        for variable, value in zip(self.model.variables, model):
            variable.assign(value)
        for variable, value in zip(self.optimizer.variables, optimizer):
            variable.assign(value)
        self.position = {
            "step": int(position["step"]),
            "epoch": int(position["epoch"]),
            "batch_in_epoch": int(position["batch_in_epoch"]),
            "epoch_sums": np.array(position["epoch_sums"], np.float64),
            "epoch_counts": np.array(position["epoch_counts"], np.float64),
            "learning_rate": float(position["learning_rate"]),
            "best_valid": float(position["best_valid"]),
            "epochs_without_gain": int(position["epochs_without_gain"]),
            "stopped": bool(position["stopped"]),
        }
        logger.info(
            "Resumed from %s: epoch %d, batch %d, step %d",
            path,
            self.position["epoch"],
            self.position["batch_in_epoch"],
            self.position["step"],
        )

    def save_checkpoint(self):
        """Writes the current state as `ckpt-<step>.npz` (atomically)."""
        self._write_variables()
        arrays = [_numpy(v) for v in self.model.variables]
        optimizer = [_numpy(v) for v in self.optimizer.variables]
        paths = (
            [v.path for v in self.model.variables],
            [v.path for v in self.optimizer.variables],
        )
        return neutral_checkpoints.save(
            self.config.out_dir,
            self.position["step"],
            arrays,
            optimizer,
            self.position,
            paths,
            self.config.keep_checkpoints,
        )

    # --- the loop --------------------------------------------------------

    def train(self):
        """Runs the remaining epochs; returns the history of every epoch
        (`OUT/history.json`, earlier interrupted runs included), then
        writes the model's files to `out_dir` (`write_outputs`)."""
        config, position = self.config, self.position
        callbacks = list(self.callbacks)
        if config.verbose:
            callbacks.append(StepProgress(config.steps_per_epoch))
        # `on_train_begin` starts the executor of callbacks Keras may run
        # asynchronously (those that only read the logs).
        callbacks = keras.callbacks.CallbackList(callbacks)
        callbacks.on_train_begin()
        try:
            while position["epoch"] < config.epochs and not position["stopped"]:
                result = self._train_epoch(
                    position["epoch"], position["batch_in_epoch"], callbacks
                )
                if config.valid:
                    result.update(self._validate(result["epoch"]))
                self.history.append(result)
                logger.info("Epoch %d: %s", result["epoch"], result)
                position["epoch"] += 1
                position["batch_in_epoch"] = 0
                position["epoch_sums"] = np.zeros(2)
                position["epoch_counts"] = np.zeros(2)
                self.save_checkpoint()
        finally:
            callbacks.on_train_end()
        if position["stopped"]:
            logger.info(
                "Early stopping after epoch %d: %d epochs in a row gained "
                "less than %g over the best validation perplexity %.3f.",
                position["epoch"],
                position["epochs_without_gain"],
                config.early_stopping_min_delta,
                position["best_valid"],
            )
        self._write_variables()
        self.restore_best()
        self.write_outputs()
        return list(self.history.entries)

    def _validate(self, epoch):
        """Validation perplexity of 1-based `epoch` and the rules'
        decisions (`ValidationRules.decide`), as `Trainer._validate`."""
        from keras_elmo.training.evaluate import evaluate_model

        config, position = self.config, self.position
        self._write_variables()
        valid = evaluate_model(
            self.model,
            self.vocabulary,
            config.valid,
            config.batch_size,
            max_tokens=config.max_tokens,
        )
        rule_state = {
            k: position[k]
            for k in ("best_valid", "epochs_without_gain", "stopped")
        }
        rule_state["learning_rate"] = position["learning_rate"]
        decisions, after = self.rules.decide(rule_state, valid["perplexity"])
        position.update(after)
        if decisions["improved"]:
            neutral_checkpoints.save_best(
                config.out_dir,
                epoch,
                [_numpy(v) for v in self.model.variables],
            )
        return {
            "valid_perplexity": valid["perplexity"],
            "valid_forward_perplexity": valid["forward_perplexity"],
            "valid_backward_perplexity": valid["backward_perplexity"],
            "best": decisions["improved"],
            "valid_gain": decisions["gain"],
            "decayed": decisions["decayed"],
            "stop": decisions["stop"],
        }

    def restore_best(self):
        """Loads the best-validation weights, if a validation set chose
        one; returns that epoch (1-based) or None, as
        `Trainer.restore_best`."""
        if not self.config.valid:
            return None
        epoch, arrays = neutral_checkpoints.load_best(
            self.config.out_dir, [tuple(v.shape) for v in self.model.variables]
        )
        if epoch is None:
            return None
        for variable, value in zip(self.model.variables, arrays):
            variable.assign(value)
        self._read_variables()
        logger.info(
            "Restored the weights of epoch %d (best validation).", epoch
        )
        return epoch

    def _batches(self, epoch, skip):
        dataset = epoch_batches(self.config, self.vocabulary, epoch).skip(skip)
        for features, targets in dataset.as_numpy_iterator():
            yield self._on_devices(
                pad_steps(
                    features["char_ids"],
                    targets["forward"],
                    targets["backward"],
                )
            )

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

    def _train_epoch(self, epoch, skip, callbacks):
        config, position = self.config, self.position
        if config.lr_schedule == "plateau":
            learning_rate = position["learning_rate"]  # the rules' decision
        else:
            learning_rate = config.learning_rate_at(epoch)
        self._set_learning_rate(learning_rate)
        logger.info(
            "Epoch %d/%d, learning rate %g",
            epoch + 1,
            config.epochs,
            learning_rate,
        )
        callbacks.on_epoch_begin(epoch)
        sums = np.array(position["epoch_sums"]) if skip else np.zeros(2)
        counts = np.array(position["epoch_counts"]) if skip else np.zeros(2)
        start, tokens_seen, done = time.perf_counter(), 0.0, skip
        for char_ids, forward, backward in self._batches(epoch, skip):
            if config.steps_per_epoch and done >= config.steps_per_epoch:
                break
            step = position["step"]
            outputs = self._step(
                self.trainable,
                self.non_trainable,
                self.optimizer_values,
                char_ids,
                forward,
                backward,
                np.array([config.seed, 2 * step], np.uint32),
            )
            s, c, norm = (
                np.asarray(keras.ops.convert_to_numpy(x), np.float64)
                for x in outputs[3:]
            )
            loss = 0.5 * float(s[0] / max(c[0], 1.0) + s[1] / max(c[1], 1.0))
            if not (np.isfinite(loss) and np.isfinite(norm)):
                raise TrainingDiverged(
                    f"Training diverged at step {step} (epoch {epoch + 1}, "
                    f"batch {done + 1}): loss {loss}, gradient norm "
                    f"{float(norm)}. Its update was not applied and nothing "
                    "was saved; the last checkpoint in "
                    f"{neutral_checkpoints.checkpoint_dir(config.out_dir)} "
                    "is intact."
                )
            self.trainable, self.non_trainable, self.optimizer_values = outputs[
                :3
            ]
            done += 1
            sums, counts = sums + s, counts + c
            tokens_seen += float(c[0])
            position.update(
                step=step + 1,
                batch_in_epoch=done,
                epoch_sums=sums,
                epoch_counts=counts,
            )
            if position["step"] % config.checkpoint_every == 0:
                self.save_checkpoint()
            logs = step_logs(step + 1, loss, norm, tokens_seen, start)
            callbacks.on_train_batch_end(done, logs)
        callbacks.on_epoch_end(epoch)
        seconds = time.perf_counter() - start
        return epoch_result(
            epoch, sums, counts, done, learning_rate, tokens_seen, seconds
        )

    def write_outputs(self):
        """Writes options.json, weights.hdf5, softmax.hdf5, vocab.txt and
        bilm.keras, as `Trainer.write_outputs`."""
        write_trained_model(self.model, self.vocabulary, self.config.out_dir)


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


def data_parallel(batch_size):
    """`keras.distribution.DataParallel` over the local devices when
    there are several and they divide `batch_size`, else None."""
    devices = keras.distribution.list_devices()
    if len(devices) < 2 or batch_size % len(devices):
        return None
    logger.info("DataParallel over %d devices.", len(devices))
    return keras.distribution.DataParallel(devices=devices)


def _scope(distribution):
    import contextlib

    return distribution.scope() if distribution else contextlib.nullcontext()


def _numpy(variable):
    """A variable's value as NumPy (torch parameters need their
    gradient tracking dropped first: `convert_to_numpy` does it)."""
    return np.asarray(keras.ops.convert_to_numpy(variable.value))
