"""Language-model losses: full and sampled softmax over real tokens only."""

import math

import numpy as np
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


def sampled_candidates(
    labels, num_sampled, vocabulary_size, seed, unique=False
):
    """`(sampled [S] int64, Q(labels) [N], Q(sampled) [S])`: the
    log-uniform candidates of one step and their expected counts, float32.

    With replacement (`unique=False`) the `S` draws are independent and
    `Q(k) = S * P(k)`. Without (`unique=True`, bilm-tf's sampler: TF's
    `log_uniform_candidate_sampler(unique=True)`), draws are made until
    `S` distinct words have come up, `n` draws in all, and
    `Q(k) = 1 - (1 - P(k))^n = -expm1(n * log1p(-P(k)))`, TensorFlow's
    expected count for that sampler (the probability that `k` is among
    the candidates).
    """
    if unique:
        return unique_log_uniform_candidates(
            labels, num_sampled, vocabulary_size, seed
        )
    sampled, probability = log_uniform_sample(
        num_sampled, vocabulary_size, seed
    )
    true_expected = tf.cast(num_sampled * probability(labels), tf.float32)
    sampled_expected = tf.cast(num_sampled * probability(sampled), tf.float32)
    return sampled, true_expected, sampled_expected


def unique_log_uniform_candidates(labels, num_sampled, vocabulary_size, seed):
    """`S` distinct log-uniform candidates, stateless, and their expected
    counts (see `sampled_candidates`).

    The draws are a stateless stream from `seed`; its first `n` values
    hold exactly `S` distinct words, the first `S` to appear, which are
    the candidates in order of first appearance (the sequential draw of
    TensorFlow's sampler, which stops at the `S`-th new word). A pool
    expected to hold ~`S + 6 sqrt(S)` distinct words is drawn at once
    (`pool_size`); a pool short of `S` distinct words is drawn again,
    twice as long, from the same seed (the longer stream's prefix is the
    same stream), which a resumed run repeats exactly.
    """
    if not 0 < num_sampled < vocabulary_size:
        raise ValueError(
            "Sampling without replacement needs `num_sampled` below the "
            f"vocabulary size {vocabulary_size}, got {num_sampled}."
        )
    first = pool_size(num_sampled, vocabulary_size)

    def distinct(size):
        sampled, _ = log_uniform_sample(size, vocabulary_size, seed)
        return tf.size(tf.unique(sampled).y)

    (size,) = tf.while_loop(
        lambda size: distinct(size) < num_sampled,
        lambda size: (size * 2,),
        (tf.constant(first),),
    )
    stream, probability = log_uniform_sample(size, vocabulary_size, seed)
    words, position = tf.unique(stream)
    first_seen = tf.math.unsorted_segment_min(
        tf.range(size), position, tf.size(words)
    )
    sampled = words[:num_sampled]
    draws = tf.cast(first_seen[num_sampled - 1] + 1, tf.float64)

    def expected(k):
        return tf.cast(
            -tf.math.expm1(draws * tf.math.log1p(-probability(k))),
            tf.float32,
        )

    return sampled, expected(labels), expected(sampled)


def check_sampler_fits(config, vocabulary_size):
    """Raises `ValueError` unless `config`'s sampler can draw its negatives
    from `vocabulary_size` words: the unique sampler draws `num_sampled`
    distinct ones, so it needs `num_sampled < vocabulary_size`."""
    n = config.num_sampled
    if n and config.sampler == "unique" and n >= vocabulary_size:
        raise ValueError(
            "`sampler='unique'` draws `num_sampled` distinct negatives: "
            f"`num_sampled` ({n}) must be below the vocabulary size "
            f"({vocabulary_size} in {config.vocab!r}); lower it or pass "
            "`sampler='replacement'`."
        )


def pool_size(num_sampled, vocabulary_size):
    """Draws expected to hold `S + 6 sqrt(S)` distinct log-uniform words
    (`E[distinct in n] = sum_k 1 - (1 - P(k))^n`, searched by doubling
    then bisection), at least `S`; capped at 64 V draws."""
    k = np.arange(vocabulary_size, dtype=np.float64)
    p = (np.log(k + 2.0) - np.log(k + 1.0)) / math.log(vocabulary_size + 1)
    log_miss = np.log1p(-p)
    want = min(num_sampled + 6.0 * math.sqrt(num_sampled), vocabulary_size)

    def distinct(n):
        return float(np.sum(-np.expm1(n * log_miss)))

    low, high = num_sampled, num_sampled
    while distinct(high) < want and high < 64 * vocabulary_size:
        low, high = high, high * 2
    while high - low > max(1, low // 100):
        middle = (low + high) // 2
        low, high = (middle, high) if distinct(middle) < want else (low, middle)
    return int(high)


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
    softmax,
    hidden,
    targets,
    num_sampled=0,
    seed=None,
    training=False,
    unique=False,
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
        unique: bool. Negatives drawn without replacement
            (`sampled_candidates`).

    Returns:
        `(loss_sum, token_count)`, float32 scalars. Logits and the
        softmax are computed in float32 whatever the compute dtype.
    """
    states, labels = _real_tokens(hidden, targets)  # [N, P], [N]
    count = tf.cast(tf.size(labels), tf.float32)
    if num_sampled and training:
        sampled, true_expected, sampled_expected = sampled_candidates(
            labels, num_sampled, softmax.vocabulary_size, seed, unique
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
