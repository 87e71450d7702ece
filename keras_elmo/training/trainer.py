"""The biLM training loop, written once, and its TensorFlow `Trainer`.

`TrainingLoop` runs a run's epochs whatever the backend: the build
sequence (seed, vocabulary, sampler check, architecture, `BiLM` +
language model, optimizer, `init_from`, validation rules), and per epoch
the learning rate, the steps with their callbacks and running totals, the
validation perplexity and the rules' decisions (best weights, plateau
decay, early stopping: `evaluate.ValidationRules`), the history, the epoch-end
checkpoint and, at the end, the best weights and the model's files. A
backend plugs in its step (`steps`) and where its position and weights
are stored:

- `Trainer` (TensorFlow): the step of `steps.make_tf_step` under a
  `tf.distribute` strategy (one device, `MirroredStrategy`,
  `MultiWorkerMirroredStrategy`: Keras 3's `fit` fails under the last,
  keras-team/keras#20585, and one code path means a multi-worker run
  computes exactly what a single process computes), float16 loss scaling,
  `tf.train` checkpoints (`checkpoints`) with the position in
  `TrainingState`;
- `neutral_trainer.NeutralTrainer` (JAX, PyTorch): the stateless step of
  `steps.make_stateless_step` over variable values, `.npz` checkpoints
  (`checkpoints`) with the position in a dict.

Checkpoints hold the model, the optimizer, the RNG states and the position
in the epoch, so a restarted run resumes mid-epoch on the same batches
(`BackupAndRestore` semantics) and, with deterministic ops, ends with the
same weights as an uninterrupted run. A run that ends drops the
optimizer's state from its last checkpoint unless
`keep_optimizer_state` (`CheckpointStore.drop_optimizer_state`): a
rerun still finds it finished, a longer one is refused by name.
`OUT/history.json` lists every epoch of a run across interruptions
(`EpochHistory`); at the end the run leaves its model's files in `OUT`
(`write_trained_model`).
"""

import contextlib
import json
import logging
import os
import time

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.language_model import BiLMLanguageModel
from keras_elmo.training import checkpoints
from keras_elmo.training.distributed_data import distributed_lm_dataset
from keras_elmo.training.distributed_data import is_chief
from keras_elmo.training.distributed_data import make_strategy
from keras_elmo.training.evaluate import ValidationRules
from keras_elmo.training.fused_loss import direction_loss_sum
from keras_elmo.training.losses import check_sampler_fits
from keras_elmo.training.sparse_adagrad import SparseAdagrad
from keras_elmo.training.sparse_adagrad import make_optimizer
from keras_elmo.training.step_callbacks import step_callbacks
from keras_elmo.training.step_callbacks import step_logs
from keras_elmo.training.steps import LossScale
from keras_elmo.training.steps import dtype_policy
from keras_elmo.training.steps import make_tf_step
from keras_elmo.training.training_config import load_init_from
from keras_elmo.training.training_config import resolve_model_config
from keras_elmo.utils.atomic import atomic_write
from keras_elmo.utils.atomic import save_keras_atomically
from keras_elmo.weights import hdf5 as model_files

logger = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last checkpoint is kept."""


class TrainingLoop:
    """The epoch loop every backend's trainer runs (module docstring).

    A subclass builds through `_build` and supplies the backend's parts:
    `_position(name)` (`step`, `epoch`, `batch_in_epoch`, `best_valid`,
    `epochs_without_gain`, `stopped`), `_begin_training` /
    `_end_training`, `_begin_epoch(epoch)` (sets and returns the learning
    rate), `_epoch_callbacks`, `_epoch_totals(skip)`, `_steps(epoch,
    skip)` (a generator running one step per `next`: `(sums, counts,
    norm, outcome)`), `_accept_step`, `_record_step`, `_end_epoch`,
    `_apply_rules`, `_save_best`, `restore_best` and `_sync_model`.
    """

    chief = True

    def _build(self, scope=None, dtype=None):
        """The vocabulary, architecture, model and optimizer of
        `self.config` (built in `scope`), `init_from`'s weights and the
        validation rules."""
        config = self.config
        self.vocabulary = Vocabulary.load(config.vocab)
        check_sampler_fits(config, len(self.vocabulary))
        self.model_config = resolve_model_config(config)
        with scope or contextlib.nullcontext():
            backbone = BiLM(
                self.model_config, dropout=config.dropout, dtype=dtype
            )
            self.model = BiLMLanguageModel(
                backbone, len(self.vocabulary), dropout=config.dropout
            )
            self.optimizer = make_optimizer(
                config.optimizer, config.learning_rate
            )
            self.optimizer.build(self.model.trainable_variables)
            self._build_state()
        if config.init_from:
            load_init_from(
                self.model,
                len(self.vocabulary),
                config.init_from,
                config.vocab,
            )
        self.rules = ValidationRules(config)

    def _build_state(self):
        """Backend state built beside the model (in its scope)."""

    def _store(self):
        """The run's `checkpoints.CheckpointStore`."""
        raise NotImplementedError

    def _check_continuable(self, completed_epochs, stopped):
        """Raises `checkpoints.RunMismatch` where the restored checkpoint
        is a finished run's without its optimizer state
        (`keep_optimizer_state` off) and `epochs` asks for more: the
        optimizer's slots would start from zero, which is not what one
        longer run computes."""
        config = self.config
        if not self._store().optimizer_dropped:
            return
        if stopped or completed_epochs >= config.epochs:
            return
        out = config.out_dir
        raise checkpoints.RunMismatch(
            f"Cannot continue the run in {out!r} to `epochs={config.epochs}`"
            f": it finished after {completed_epochs} epoch"
            f"{'' if completed_epochs == 1 else 's'} and kept its weights "
            "but not its optimizer's state (`keep_optimizer_state` was off), "
            "which continuing it needs. Pass `force=True` to start over, or "
            "fine-tune from its weights into another `out_dir` with "
            f"`init_from` {os.path.join(out, 'options.json')} "
            f"{os.path.join(out, 'weights.hdf5')} "
            f"{os.path.join(out, 'softmax.hdf5')}."
        )

    # --- the loop -------------------------------------------------------

    def train(self):
        """Runs the remaining epochs; returns the history of every epoch.

        The history includes the epochs of earlier, interrupted runs into
        the same `out_dir` (`out_dir/history.json`). With a validation
        set, the model left in `self.model` and written to `out_dir` is
        the one of the epoch with the lowest validation perplexity. A run
        whose model `out_dir` already holds (`self.finished`) trains and
        writes nothing.
        """
        config = self.config
        if self.finished:
            logger.info("%s holds this run's finished model.", config.out_dir)
            return list(self.history.entries)
        self._begin_training()
        try:
            while self._position("epoch") < config.epochs and not (
                self._position("stopped")
            ):
                epoch = self._position("epoch")
                result = self._train_epoch(
                    epoch, self._position("batch_in_epoch")
                )
                if config.valid:
                    result.update(self._validate(result["epoch"]))
                self.history.append(result)
                if self.chief:
                    logger.info("Epoch %d: %s", epoch + 1, result)
                self._end_epoch()
        finally:
            self._end_training()
        if self._position("stopped") and self.chief:
            logger.info(
                "Early stopping after epoch %d: %d epochs in a row gained "
                "less than %g over the best validation perplexity %.3f.",
                self._position("epoch"),
                self._position("epochs_without_gain"),
                config.early_stopping_min_delta,
                self._position("best_valid"),
            )
        self._sync_model()
        if self.chief and not config.keep_optimizer_state:
            self._store().drop_optimizer_state()
        self.restore_best()
        if self.chief:
            self.write_outputs()
        return list(self.history.entries)

    def _train_epoch(self, epoch, skip):
        config = self.config
        learning_rate = self._begin_epoch(epoch)
        if self.chief:
            logger.info(
                "Epoch %d/%d, learning rate %g",
                epoch + 1,
                config.epochs,
                learning_rate,
            )
        callbacks = self._epoch_callbacks()
        callbacks.on_epoch_begin(epoch)
        sums, counts = self._epoch_totals(skip)
        start, tokens_seen, done = time.perf_counter(), 0.0, skip
        steps = self._steps(epoch, skip)
        target = config.steps_per_epoch
        while target is None or done < target:
            step = self._position("step")
            outputs = next(steps, None)
            if outputs is None:
                break
            s, c, norm, outcome = outputs
            loss = 0.5 * float(s[0] / max(c[0], 1.0) + s[1] / max(c[1], 1.0))
            done += 1
            if not self._accept_step(loss, norm, outcome, step, epoch, done):
                continue
            sums += s
            counts += c
            tokens_seen += float(c[0])
            self._record_step(step + 1, done, sums, counts)
            logs = step_logs(step + 1, loss, norm, tokens_seen, start)
            callbacks.on_train_batch_end(done, logs)
        callbacks.on_epoch_end(epoch)
        seconds = time.perf_counter() - start
        return epoch_result(
            epoch, sums, counts, done, learning_rate, tokens_seen, seconds
        )

    def _validate(self, epoch):
        """Validation perplexity of 1-based `epoch` and the rules'
        decisions; the best weights so far are saved (`_save_best`)."""
        from keras_elmo.training.evaluate import evaluate_model

        config = self.config
        self._sync_model()
        valid = evaluate_model(
            self.model,
            self.vocabulary,
            config.valid,
            config.batch_size,
            max_tokens=config.max_tokens,
        )
        self._log_validation(valid["perplexity"])
        decisions = self._apply_rules(valid["perplexity"])
        if decisions["improved"]:
            self._save_best(epoch)
        return {
            "valid_perplexity": valid["perplexity"],
            "valid_forward_perplexity": valid["forward_perplexity"],
            "valid_backward_perplexity": valid["backward_perplexity"],
            "best": decisions["improved"],
            "valid_gain": decisions["gain"],
            "decayed": decisions["decayed"],
            "stop": decisions["stop"],
        }

    def _sync_model(self):
        """Makes `self.model`'s variables hold the trained values."""

    def _log_validation(self, perplexity):
        """Records the validation perplexity (TensorBoard on TensorFlow)."""

    def write_outputs(self):
        """Writes options.json, weights.hdf5, softmax.hdf5, vocab, .keras."""
        write_trained_model(self.model, self.vocabulary, self.config.out_dir)


class Trainer(TrainingLoop):
    """The loop on TensorFlow: the model built under a strategy, the step
    of `steps.make_tf_step`, its variables checkpointed in place
    (`checkpoints.CheckpointStore`).

    Args:
        config: `keras_elmo.training.TrainingConfig`.
        strategy: optional `tf.distribute.Strategy` (else from
            `config.strategy`).
        force: bool. Start over, discarding the checkpoints in
            `config.out_dir`; else a resume of checkpoints of another run
            or format raises `checkpoints.RunMismatch` naming what differs.
        verify_run: bool. False: restore the newest checkpoint without
            that check, to read it (evaluate, snapshot), not to train on.
    """

    def __init__(self, config, strategy=None, force=False, verify_run=True):
        self.config = config
        if config.deterministic:
            tf.config.experimental.enable_op_determinism()
        keras.utils.set_random_seed(config.seed)
        self.strategy = strategy or make_strategy(config.strategy)
        self.chief = is_chief(self.strategy)
        self._build(self.strategy.scope(), dtype_policy(config.mixed_precision))
        record = checkpoints.run_record(config, self.model_config)
        checkpoints.prepare_run(
            config.out_dir, record, force, self.chief, verify_run
        )
        self.manager, self.best_manager = checkpoints.make_stores(
            self.model,
            self.optimizer,
            self.state,
            self.loss_scale.value,
            config.out_dir,
            self.strategy,
            keep=config.keep_checkpoints,
        )
        restored = self.manager.restore()
        if restored:
            logger.info(
                "Resumed from %s: epoch %d, batch %d, step %d",
                restored,
                int(self.state.epoch.numpy()),
                int(self.state.batch_in_epoch.numpy()),
                int(self.state.step.numpy()),
            )
        self.resumed_from = restored
        if verify_run:  # a reader of the checkpoint trains nothing
            self._check_continuable(
                int(self.state.epoch.numpy()),
                bool(self.state.stopped.numpy()),
            )
        self.history = EpochHistory(
            config.out_dir, int(self.state.epoch.numpy()), self.chief
        )
        # A rerun of a finished run: `train` then changes nothing.
        self.finished = finished_model(
            config.out_dir,
            int(self.state.epoch.numpy()),
            config.epochs,
            restored and restored + ".index",
            stopped=bool(self.state.stopped.numpy()),
        )
        self._writer = None
        self._train_step = make_tf_step(
            config,
            self.model,
            self.optimizer,
            self.strategy,
            self.loss_scale,
            direction_loss_sum,
            sparse_rows=isinstance(self.optimizer, SparseAdagrad),
        )

    def _build_state(self):
        self.loss_scale = LossScale(self.config.mixed_precision == "float16")
        self.state = checkpoints.TrainingState(self.config.learning_rate)

    def _store(self):
        return self.manager

    # --- the loop's parts -------------------------------------------------

    def _position(self, name):
        value = getattr(self.state, name).numpy()
        if name == "stopped":
            return bool(value)
        return float(value) if name == "best_valid" else int(value)

    def _begin_training(self):
        self._writer = checkpoints.summary_writer(
            self.config.out_dir, self.chief
        )

    def _end_training(self):
        pass

    def _begin_epoch(self, epoch):
        learning_rate = self.rules.learning_rate(self.state, epoch)
        self.optimizer.learning_rate = learning_rate
        return learning_rate

    def _epoch_callbacks(self):
        return step_callbacks(
            self.config, self.chief, self._writer, self.manager
        )

    def _epoch_totals(self, skip):
        return self.state.epoch_totals(skip)

    def _steps(self, epoch, skip):
        iterator = iter(
            distributed_lm_dataset(
                self.strategy, self.config, self.vocabulary, epoch, skip
            )
        )
        while True:
            step = int(self.state.step.numpy())
            try:
                s, c, norm, applied = self._train_step(
                    iterator, tf.constant(step, tf.int64)
                )
            except (StopIteration, tf.errors.OutOfRangeError):
                return
            yield s.numpy(), c.numpy(), norm, applied

    def _accept_step(self, loss, norm, applied, step, epoch, batch):
        if self._step_applied(loss, applied, norm, step, epoch, batch):
            return True
        self.state.batch_in_epoch.assign(batch)
        return False

    def _record_step(self, step, batch, sums, counts):
        self.state.step.assign_add(1)
        self.state.batch_in_epoch.assign(batch)
        self.state.keep_epoch_totals(sums, counts)
        self.loss_scale.good_step()

    def _end_epoch(self):
        state = self.state
        state.epoch.assign_add(1)
        state.batch_in_epoch.assign(0)
        state.keep_epoch_totals(np.zeros(2), np.zeros(2))
        self.manager.save(checkpoint_number=int(state.step.numpy()))

    def _log_validation(self, perplexity):
        if self._writer is not None:
            with self._writer.as_default(step=int(self.state.step.numpy())):
                tf.summary.scalar("valid_perplexity", perplexity)

    def _apply_rules(self, perplexity):
        return self.rules.after_epoch(self.state, perplexity)

    def _save_best(self, epoch):
        self.best_manager.save(checkpoint_number=epoch)

    def restore_best(self):
        """Loads the best-validation weights, if a validation set chose one.

        Returns the epoch (1-based) whose weights the model now holds, or
        None (no validation: the last epoch's weights stay).
        """
        if not self.config.valid:
            return None
        return checkpoints.restore_best(self.best_manager)

    def _step_applied(self, loss, applied, norm, step, epoch, batch):
        """Whether the step's update counts: False for a float16 overflow
        the loss scale absorbs (lowered; the zeroed step is skipped).

        Raises:
            TrainingDiverged: a non-finite loss or gradient the loss scale
                cannot explain; the step's gradient was zeroed and nothing
                was saved.
        """
        overflow = float(applied.numpy()) < 1.0
        if overflow and self.loss_scale.lower(np.isfinite(loss)):
            return False
        if overflow or not np.isfinite(loss):
            raise TrainingDiverged(
                f"Training diverged at step {step} (epoch {epoch + 1}, "
                f"batch {batch}): loss {loss}, gradient norm "
                f"{float(norm.numpy())}. Its gradient was zeroed and "
                "nothing was saved; the last good checkpoint in "
                f"{self.manager.directory} is intact."
            )
        return True


def write_trained_model(model, vocabulary, out_dir):
    """Writes a trained `BiLMLanguageModel` into `out_dir`, for either
    trainer: options.json + weights.hdf5 (AllenNLP format) of its
    backbone, softmax.hdf5 (`W` `[V, P]` and its bias), vocab.txt, and
    bilm.keras, an inference `BiLM` rebuilt from the AllenNLP files (so
    it holds exactly the weights a user loads from them)."""
    paths = model_files.model_paths(out_dir)
    model.backbone.save_allennlp(paths["options"], paths["weights"])
    model_files.save_softmax_hdf5(model.softmax, paths["softmax"])
    vocabulary.save(paths["vocabulary"])
    inference = BiLM.from_allennlp(paths["options"], paths["weights"])
    save_keras_atomically(inference, paths["keras"])
    logger.info("Wrote the trained model to %s", out_dir)


def finished_model(
    out_dir, completed_epochs, epochs, checkpoint, stopped=False
):
    """Whether `out_dir` already holds the finished model of this run, for
    either trainer: its newest checkpoint (the file `checkpoint`) has
    completed `epochs` (or stopped early), and every model file exists
    and was written after that checkpoint (a run killed between its last
    checkpoint and its model files, or one that trained more epochs
    since, is not finished). Such a rerun trains and writes nothing."""
    if checkpoint is None or not os.path.isfile(checkpoint):
        return False
    if completed_epochs < epochs and not stopped:
        return False
    saved = os.stat(checkpoint).st_mtime_ns
    for path in model_files.model_paths(out_dir).values():
        if not os.path.isfile(path) or os.stat(path).st_mtime_ns < saved:
            return False
    return True


def epoch_result(epoch, sums, counts, steps, learning_rate, tokens, seconds):
    """The history entry of one finished epoch (either trainer's).

    `sums` and `counts` are the epoch's `[2]` cross-entropy sums and real
    token counts (forward, backward), so

        loss = (sums[0] / counts[0] + sums[1] / counts[1]) / 2,
        perplexity = exp(loss);

    `tokens` are the forward tokens seen in `seconds` by this run.
    """
    mean = 0.5 * (sums[0] / max(counts[0], 1) + sums[1] / max(counts[1], 1))
    return {
        "epoch": epoch + 1,
        "loss": float(mean),
        "perplexity": float(np.exp(mean)),
        "steps": steps,
        "learning_rate": learning_rate,
        "tokens_per_second": tokens / max(seconds, 1e-9),
        "seconds": seconds,
    }


class EpochHistory:
    """The list of per-epoch results of a run, kept in `out_dir`.

    Each entry is the dict `Trainer` builds at an epoch's end (rate,
    training and validation perplexity, the validation rules'
    decisions). An epoch interrupted and resumed is one entry whose step
    count, loss and perplexity cover all of its steps (the running totals
    are checkpointed, `checkpoints.TrainingState`); only its timing
    (`seconds`, `tokens_per_second`) covers the last run alone. Only
    the chief writes; the file is replaced atomically after every epoch,
    before the epoch-end checkpoint, so on resume the entries past the
    restored epoch (written by an epoch whose checkpoint never landed)
    are dropped.

    Args:
        out_dir: the run's output directory.
        completed_epochs: int, epochs the restored checkpoint completed.
        chief: bool, whether this worker writes.
    """

    def __init__(self, out_dir, completed_epochs, chief=True):
        self.path = os.path.join(out_dir, "history.json")
        self.chief = chief
        self.entries = []
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.entries = [
                    h for h in json.load(f) if h["epoch"] <= completed_epochs
                ]

    def append(self, result):
        self.entries.append(result)
        if not self.chief:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with atomic_write(self.path) as f:
            json.dump(self.entries, f, indent=1)
