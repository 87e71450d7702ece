"""Perplexity: token-weighted full softmax, forward and backward apart."""

import math

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.data.corpus import iter_sentences
from keras_elmo.data.lm_dataset import make_lm_dataset
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
