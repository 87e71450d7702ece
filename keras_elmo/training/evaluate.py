"""Validation: perplexity, and the decisions a run takes from it.

`evaluate_model` scores a model's token-weighted full-softmax perplexity,
forward and backward apart; `unigram_perplexity` the baseline.

Decisions a run takes from validation perplexity alone, as code.

After every epoch with a validation set, `ValidationRules.after_epoch`
compares the epoch's validation perplexity `v` with the best one so far
`b` through the relative gain (1 for the first epoch, which has no `b`)

    gain = (b - v) / b

and applies three rules, in this order:

1. **Best checkpoint.** `v < b`: this epoch's weights become the model the
   run writes at the end (and that any test set is scored on).
2. **Plateau decay** (`lr_schedule="plateau"`): `gain < plateau_threshold`
   multiplies the learning rate of the following epochs by
   `plateau_factor`.
3. **Early stopping** (`early_stopping_patience` set): `patience` epochs in
   a row with `gain < early_stopping_min_delta` end the run.

The state (learning rate, best perplexity, epochs without gain) lives in
`TrainingState` (TensorFlow) or the checkpointed position (`decide`, the
same rules over a plain dict, for JAX and PyTorch), so it is checkpointed
with the weights and a resumed run takes the same decisions as an
uninterrupted one.
"""

import math

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.data.corpus import iter_sentences
from keras_elmo.data.lm_dataset import make_lm_dataset
from keras_elmo.training.checkpoints import NO_BEST_YET
from keras_elmo.training.fused_loss import direction_loss_sum


def evaluate_model(model, vocabulary, data, batch_size=64, max_tokens=100):
    """Full-softmax perplexity of a `BiLMLanguageModel` on `data` files.

    Every sentence `w_1..w_n` is scored as bilm-tf does: the forward LM
    predicts `w_1..w_n, </S>` and the backward LM `<S>, w_1..w_n`, so each
    direction makes `n + 1` predictions. Out-of-vocabulary words are scored
    as `<UNK>`; their share is reported as `oov_rate`.

    Returns:
        A dict: `forward_perplexity = exp(sum CE_fwd / N)`,
        `backward_perplexity` likewise, `perplexity` = their geometric mean
        (the figure bilm-tf reports, `exp` of the mean of the two losses),
        `tokens` = `N` (predictions per direction), `oov_rate` = `<UNK>`
        words / words (boundaries excluded).
    """
    dataset = make_lm_dataset(
        data,
        vocabulary,
        global_batch_size=batch_size,
        max_tokens=max_tokens,
        shuffle=False,
    )
    unk, eos = vocabulary.unk_id, vocabulary.eos_id
    if keras.config.backend() != "tensorflow":
        batch_sums = _keras_ops_batch_sums(model, unk, eos)
        dataset = dataset.as_numpy_iterator()
    else:
        batch_sums = _tensorflow_batch_sums(model, unk, eos)
    sums = np.zeros(2)
    counts = np.zeros(2)
    words = unknown = 0.0
    for features, targets in dataset:
        s, c, w, u = (
            np.asarray(keras.ops.convert_to_numpy(x), np.float64)
            for x in batch_sums(features, targets)
        )
        sums += s
        counts += c
        words += float(w)
        unknown += float(u)
    if counts[0] == 0:
        raise ValueError(
            f"`data` {data!r} holds no sentences to evaluate (only blank or "
            "malformed lines?)."
        )
    forward, backward = sums / counts
    return {
        "forward_perplexity": math.exp(forward),
        "backward_perplexity": math.exp(backward),
        "perplexity": math.exp(0.5 * (forward + backward)),
        "tokens": int(counts[0]),
        "oov_rate": unknown / max(words, 1.0),
    }


def _keras_ops_batch_sums(model, unk, eos):
    """`batch_sums` of `evaluate_model` on JAX and PyTorch: the
    `losses` definition over NumPy batches, eagerly."""
    from keras import ops

    from keras_elmo.training.losses import full_softmax_loss_sum

    def batch_sums(features, targets):
        hidden = model(features["char_ids"], training=False)
        sums, counts = [], []
        for direction in ("forward", "backward"):
            loss_sum, count = full_softmax_loss_sum(
                model.softmax.embeddings,
                model.softmax.bias,
                hidden[direction],
                targets[direction],
            )
            sums.append(ops.convert_to_numpy(loss_sum))
            counts.append(ops.convert_to_numpy(count))
        forward = targets["forward"]
        words = np.sum((forward >= 0) & (forward != eos))
        return np.array(sums), np.array(counts), words, np.sum(forward == unk)

    return batch_sums


def _tensorflow_batch_sums(model, unk, eos):
    """`batch_sums` of `evaluate_model` on TensorFlow (`fused_loss`)."""

    @tf.function(reduce_retracing=True)
    def batch_sums(features, targets):
        hidden = model(features["char_ids"], training=False)
        sums, counts = [], []
        for direction in ("forward", "backward"):
            loss_sum, count = direction_loss_sum(
                model.softmax, hidden[direction], targets[direction]
            )
            sums.append(loss_sum)
            counts.append(count)
        forward = targets["forward"]
        words = tf.logical_and(forward >= 0, forward != eos)
        unknown = tf.reduce_sum(tf.cast(forward == unk, tf.float64))
        return (
            tf.cast(tf.stack(sums), tf.float64),
            tf.stack(counts),
            tf.reduce_sum(tf.cast(words, tf.float64)),
            unknown,
        )

    return batch_sums


def unigram_perplexity(train, data, vocabulary, max_tokens=100):
    """Perplexity of an add-one unigram model over the same predictions.

    The baseline an LM must beat: `p(w) = (n_w + 1) / (N + V)` from the
    vocabulary ids of the `train` files (out-of-vocabulary words counted
    as `<UNK>`, one `</S>` per sentence piece), scored on what the forward
    LM predicts in `data`: every word and one `</S>` per piece.
    """

    def id_counts(pattern):
        counts = np.zeros(len(vocabulary), np.float64)
        for tokens in iter_sentences(pattern):
            for start in range(0, len(tokens), max_tokens):
                piece = tokens[start : start + max_tokens]
                for token in piece:
                    counts[vocabulary.token_to_id(token.decode("utf-8"))] += 1
                counts[vocabulary.eos_id] += 1
        return counts

    train_counts, data_counts = id_counts(train), id_counts(data)
    p = (train_counts + 1.0) / (train_counts.sum() + len(vocabulary))
    nll = -(data_counts * np.log(p)).sum() / max(data_counts.sum(), 1.0)
    return math.exp(nll)


class ValidationRules:
    """The plateau / early-stopping / best-checkpoint rules of a config.

    Args:
        config: `keras_elmo.training.TrainingConfig`.
    """

    def __init__(self, config):
        self.config = config

    def learning_rate(self, state, epoch):
        """The learning rate of 0-based `epoch` under the config's schedule.

        `"epoch"`: a function of the epoch alone
        (`TrainingConfig.learning_rate_at`); `"plateau"`: the rate the
        decisions so far have left in `state.learning_rate`.
        """
        if self.config.lr_schedule == "plateau":
            return float(state.learning_rate.numpy())
        return self.config.learning_rate_at(epoch)

    def after_epoch(self, state, valid_perplexity):
        """Applies the rules to one epoch's validation perplexity.

        Args:
            state: `checkpoints.TrainingState` (updated in place).
            valid_perplexity: float, this epoch's validation perplexity.

        Returns:
            A dict: `improved` (new best: save these weights), `gain`,
            `decayed` (the next epochs train at a lower rate), `stop` (end
            the run after this epoch).
        """
        before = {
            "best_valid": float(state.best_valid.numpy()),
            "epochs_without_gain": int(state.epochs_without_gain.numpy()),
            "learning_rate": state.learning_rate,
            "stopped": bool(state.stopped.numpy()),
        }
        decisions, after = self.decide(before, valid_perplexity)
        if decisions["improved"]:
            state.best_valid.assign(after["best_valid"])
        if decisions["decayed"]:
            # `state.learning_rate * factor` in TensorFlow, as always.
            state.learning_rate.assign(after["learning_rate"])
        state.epochs_without_gain.assign(after["epochs_without_gain"])
        if decisions["stop"]:
            state.stopped.assign(True)
        return decisions

    def decide(self, state, valid_perplexity):
        """The rules over a plain state, for any trainer.

        Args:
            state: dict with `best_valid` (float, `NO_BEST_YET` before the
                first), `epochs_without_gain` (int), `learning_rate` and
                `stopped`.
            valid_perplexity: float.

        Returns:
            `(decisions, state)`: `after_epoch`'s dict and the new state
            (a new dict; `state` is left as it was).
        """
        config = self.config
        best = state["best_valid"]
        if not best < NO_BEST_YET:  # none yet (or inf, from older runs)
            gain = 1.0
        else:
            gain = (best - valid_perplexity) / best
        improved = valid_perplexity < best
        after = dict(state)
        if improved:
            after["best_valid"] = valid_perplexity
        decayed = (
            config.lr_schedule == "plateau" and gain < config.plateau_threshold
        )
        if decayed:
            after["learning_rate"] = state["learning_rate"] * (
                config.plateau_factor
            )
        if gain < config.early_stopping_min_delta:
            after["epochs_without_gain"] = state["epochs_without_gain"] + 1
        else:
            after["epochs_without_gain"] = 0
        patience = config.early_stopping_patience
        stop = patience is not None and after["epochs_without_gain"] >= patience
        if stop:
            after["stopped"] = True
        decisions = {
            "improved": bool(improved),
            "gain": float(gain),
            "decayed": bool(decayed),
            "stop": bool(stop),
        }
        return decisions, after
