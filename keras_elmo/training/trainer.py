"""`Trainer`: the distributed, resumable biLM training loop.

One loop serves every strategy (one device, `MirroredStrategy`,
`MultiWorkerMirroredStrategy`): Keras 3's `fit` fails under
`MultiWorkerMirroredStrategy` (keras-team/keras#20585), and one code path
means a multi-worker run computes exactly what a single process computes.
Each step, on every replica:

    loss = (sum CE_fwd / N_fwd + sum CE_bwd / N_bwd) / 2

with `N` the token counts of the *global* batch (all-reduced), so the
summed gradient is the gradient of the global mean, times
`config.loss_multiplier` (1; bilm-tf's recipe: 20, its `unroll_steps`,
which its Adagrad and clip see). Gradients are
all-reduced, clipped by their global norm, and applied with a Keras
optimizer. Checkpoints hold the model, the optimizer, the RNG states and
the position in the epoch, so a restarted run resumes mid-epoch on the same
batches (`BackupAndRestore` semantics) and, with deterministic ops, ends
with the same weights as an uninterrupted run.
"""

import logging
import time

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm_language_model import BiLMLanguageModel
from keras_elmo.training import checkpoints
from keras_elmo.training import run_record
from keras_elmo.training.distributed_data import distributed_lm_dataset
from keras_elmo.training.history import EpochHistory
from keras_elmo.training.history import epoch_result
from keras_elmo.training.init_from import load_init_from
from keras_elmo.training.init_from import resolve_model_config
from keras_elmo.training.loss_scale import LossScale
from keras_elmo.training.loss_scale import dtype_policy
from keras_elmo.training.losses import check_sampler_fits
from keras_elmo.training.optimizer import make_optimizer
from keras_elmo.training.step_callbacks import step_callbacks
from keras_elmo.training.step_callbacks import step_logs
from keras_elmo.training.steps import make_tf_step
from keras_elmo.training.strategy import is_chief
from keras_elmo.training.strategy import make_strategy
from keras_elmo.training.trained_model import write_trained_model
from keras_elmo.training.validation_rules import ValidationRules

logger = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last checkpoint is kept."""


class Trainer:
    """Builds the model under a strategy and runs the training loop.

    Args:
        config: `keras_elmo.training.TrainingConfig`.
        strategy: optional `tf.distribute.Strategy` (else from
            `config.strategy`).
        force: bool. Start over, discarding the checkpoints in
            `config.out_dir`; else a resume of checkpoints of another run
            or format raises `run_record.RunMismatch` naming what differs.
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
        self.vocabulary = Vocabulary.load(config.vocab)
        check_sampler_fits(config, len(self.vocabulary))
        self.model_config = resolve_model_config(config)
        dtype = dtype_policy(config.mixed_precision)
        with self.strategy.scope():
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
            self.loss_scale = LossScale(config.mixed_precision == "float16")
            self.state = checkpoints.TrainingState(config.learning_rate)
        if config.init_from:
            load_init_from(self.model, len(self.vocabulary), config.init_from)
        record = run_record.run_record(config, self.model_config)
        run_record.prepare_run(
            config.out_dir, record, force, self.chief, verify_run
        )
        self.manager = checkpoints.make_manager(
            self.model,
            self.optimizer,
            self.state,
            self.loss_scale,
            config.out_dir,
            self.strategy,
            keep=config.keep_checkpoints,
        )
        self.best_manager = checkpoints.make_best_manager(
            self.model, config.out_dir, self.strategy
        )
        self.rules = ValidationRules(config)
        restored = checkpoints.restore_latest(self.manager)
        if restored:
            logger.info(
                "Resumed from %s: epoch %d, batch %d, step %d",
                restored,
                int(self.state.epoch.numpy()),
                int(self.state.batch_in_epoch.numpy()),
                int(self.state.step.numpy()),
            )
        self.resumed_from = restored
        self.history = EpochHistory(
            config.out_dir, int(self.state.epoch.numpy()), self.chief
        )
        self._train_step = make_tf_step(
            config, self.model, self.optimizer, self.strategy, self.loss_scale
        )

    # --- the loop -------------------------------------------------------

    def train(self):
        """Runs the remaining epochs; returns the history of every epoch.

        The history includes the epochs of earlier, interrupted runs into
        the same `out_dir` (`out_dir/history.json`). With a validation
        set, the model left in `self.model` and written to `out_dir` is
        the one of the epoch with the lowest validation perplexity.
        """
        config = self.config
        writer = checkpoints.summary_writer(config.out_dir, self.chief)
        state = self.state
        while int(state.epoch.numpy()) < config.epochs and not bool(
            state.stopped.numpy()
        ):
            epoch = int(state.epoch.numpy())
            skip = int(state.batch_in_epoch.numpy())
            result = self._train_epoch(epoch, skip, writer)
            if config.valid:
                result.update(self._validate(result["epoch"], writer))
            self.history.append(result)
            if self.chief:
                logger.info("Epoch %d: %s", epoch + 1, result)
            state.epoch.assign_add(1)
            state.batch_in_epoch.assign(0)
            state.keep_epoch_totals(np.zeros(2), np.zeros(2))
            self.manager.save(checkpoint_number=int(state.step.numpy()))
        if bool(state.stopped.numpy()) and self.chief:
            logger.info(
                "Early stopping after epoch %d: %d epochs in a row gained "
                "less than %g over the best validation perplexity %.3f.",
                int(state.epoch.numpy()),
                int(state.epochs_without_gain.numpy()),
                config.early_stopping_min_delta,
                float(state.best_valid.numpy()),
            )
        self.restore_best()
        if self.chief:
            self.write_outputs()
        return list(self.history.entries)

    def _validate(self, epoch, writer):
        """Validation perplexity of the epoch and the rules' decisions."""
        from keras_elmo.training.evaluate import evaluate_model

        config = self.config
        valid = evaluate_model(
            self.model,
            self.vocabulary,
            config.valid,
            config.batch_size,
            max_tokens=config.max_tokens,
        )
        if writer is not None:
            with writer.as_default(step=int(self.state.step.numpy())):
                tf.summary.scalar("valid_perplexity", valid["perplexity"])
        decisions = self.rules.after_epoch(self.state, valid["perplexity"])
        if decisions["improved"]:
            self.best_manager.save(checkpoint_number=epoch)
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
        """Loads the best-validation weights, if a validation set chose one.

        Returns the epoch (1-based) whose weights the model now holds, or
        None (no validation: the last epoch's weights stay).
        """
        if not self.config.valid:
            return None
        return checkpoints.restore_best(self.best_manager)

    def _train_epoch(self, epoch, skip, writer):
        config = self.config
        iterator = iter(
            distributed_lm_dataset(
                self.strategy, config, self.vocabulary, epoch, skip
            )
        )
        learning_rate = self.rules.learning_rate(self.state, epoch)
        self.optimizer.learning_rate = learning_rate
        if self.chief:
            logger.info(
                "Epoch %d/%d, learning rate %g",
                epoch + 1,
                config.epochs,
                learning_rate,
            )
        callbacks = step_callbacks(config, self.chief, writer, self.manager)
        callbacks.on_epoch_begin(epoch)
        sums, counts = self.state.epoch_totals(skip)
        start, tokens_seen = time.perf_counter(), 0.0
        done = skip
        target = config.steps_per_epoch
        while target is None or done < target:
            step = int(self.state.step.numpy())
            try:
                s, c, norm, applied = self._train_step(
                    iterator, tf.constant(step, tf.int64)
                )
            except (StopIteration, tf.errors.OutOfRangeError):
                break
            s, c = s.numpy(), c.numpy()
            loss = 0.5 * float(s[0] / max(c[0], 1.0) + s[1] / max(c[1], 1.0))
            done += 1
            if not self._step_applied(loss, applied, norm, step, epoch, done):
                self.state.batch_in_epoch.assign(done)
                continue
            sums += s
            counts += c
            tokens_seen += float(c[0])
            self.state.step.assign_add(1)
            self.state.batch_in_epoch.assign(done)
            self.state.keep_epoch_totals(sums, counts)
            self.loss_scale.good_step()
            logs = step_logs(step + 1, loss, norm, tokens_seen, start)
            callbacks.on_train_batch_end(done, logs)
        callbacks.on_epoch_end(epoch)
        seconds = time.perf_counter() - start
        return epoch_result(
            epoch, sums, counts, done, learning_rate, tokens_seen, seconds
        )

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

    def write_outputs(self):
        """Writes options.json, weights.hdf5, softmax.hdf5, vocab, .keras."""
        write_trained_model(self.model, self.vocabulary, self.config.out_dir)
