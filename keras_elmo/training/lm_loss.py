"""Language-model losses: full and sampled softmax over real tokens only."""

import math

import tensorflow as tf

from keras_elmo.training.sampled_softmax import sampled_softmax_losses


def log_uniform_sample(num_sampled, vocabulary_size, seed):
    """Stateless log-uniform (Zipfian) candidate sampling, with replacement.

    `P(k) = (log(k + 2) - log(k + 1)) / log(V + 1)`, the distribution of
    TensorFlow's `log_uniform_candidate_sampler`, which suits vocabularies
    sorted by descending frequency (the bilm-tf vocabulary order). Drawn
    with a stateless RNG from `seed` (a `[2]` int tensor), so a resumed or
    distributed run draws exactly the same candidates.

    Returns:
        `(sampled [S] int64, probability function k -> P(k))`.
    """
    log_range = math.log(vocabulary_size + 1)
    u = tf.random.stateless_uniform([num_sampled], seed=seed, dtype=tf.float64)
    sampled = tf.cast(tf.floor(tf.exp(u * log_range)), tf.int64) - 1
    sampled = tf.clip_by_value(sampled, 0, vocabulary_size - 1)

    def probability(k):
        k = tf.cast(k, tf.float64)
        return (tf.math.log(k + 2.0) - tf.math.log(k + 1.0)) / log_range

    return sampled, probability


def sampled_candidates(labels, num_sampled, vocabulary_size, seed):
    """`(sampled [S] int64, Q(labels) [N], Q(sampled) [S])`: the
    log-uniform candidates of one step and their expected counts among
    the `S` draws (`Q(k) = S * P(k)`), float32."""
    sampled, probability = log_uniform_sample(
        num_sampled, vocabulary_size, seed
    )
    true_expected = tf.cast(num_sampled * probability(labels), tf.float32)
    sampled_expected = tf.cast(num_sampled * probability(sampled), tf.float32)
    return sampled, true_expected, sampled_expected


def _real_tokens(hidden, targets):
    """`(states [N, P] float32, labels [N] int64)` of the non-padding tokens,
    in row-major order."""
    real = tf.greater_equal(targets, 0)
    states = tf.cast(tf.boolean_mask(hidden, real), tf.float32)
    labels = tf.cast(tf.boolean_mask(targets, real), tf.int64)
    return states, labels


def _full_softmax_cross_entropy(softmax, states, labels):
    """`-log softmax(h W^T + b)[label]` per row, float32 `[N]`."""
    weights = tf.convert_to_tensor(softmax.embeddings)
    bias = tf.convert_to_tensor(softmax.bias)
    logits = tf.matmul(states, weights, transpose_b=True) + bias
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits
    )


def full_softmax_losses(softmax, hidden, targets):
    """Full-softmax cross-entropy of every real token of one direction.

    The per-token terms that `direction_loss_sum` (full softmax) adds up,
    for analyses that need them one by one.

    Args:
        softmax: the `LMSoftmax` layer.
        hidden: float `[B, T1, P]`, the states that predict `targets`.
        targets: int `[B, T1]` word ids, -1 at padding.

    Returns:
        float32 `[N]`, `N` = the number of `targets >= 0`, in row-major
        order (the order of `tf.boolean_mask(targets, targets >= 0)`).
    """
    return _full_softmax_cross_entropy(softmax, *_real_tokens(hidden, targets))


def direction_loss_sum(
    softmax, hidden, targets, num_sampled=0, seed=None, training=False
):
    """Summed cross-entropy over the real tokens of one direction.

    Args:
        softmax: the `LMSoftmax` layer (`embeddings` `[V, P]`, `bias`).
        hidden: float `[B, T1, P]`, the states that predict `targets`.
        targets: int `[B, T1]` word ids, -1 at padding.
        num_sampled: int. 0 = full softmax; else the sampled-softmax
            negatives (used only while training), through
            `sampled_softmax.sampled_softmax_losses`.
        seed: `[2]` int tensor for the sampler (stateless).
        training: bool.

    Returns:
        `(loss_sum, token_count)`, float32 scalars. Logits and the
        softmax are computed in float32 whatever the compute dtype.
    """
    states, labels = _real_tokens(hidden, targets)  # [N, P], [N]
    count = tf.cast(tf.size(labels), tf.float32)
    if num_sampled and training:
        sampled, true_expected, sampled_expected = sampled_candidates(
            labels, num_sampled, softmax.vocabulary_size, seed
        )
        losses = sampled_softmax_losses(
            tf.convert_to_tensor(softmax.embeddings),
            tf.convert_to_tensor(softmax.bias),
            labels,
            states,
            sampled,
            true_expected,
            sampled_expected,
        )
    else:
        losses = _full_softmax_cross_entropy(softmax, states, labels)
    return tf.reduce_sum(losses), count
