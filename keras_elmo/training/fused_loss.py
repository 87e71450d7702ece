"""TensorFlow's fast path of the biLM loss that `losses` defines in keras.ops.

The TensorFlow trainer and evaluators gather the real tokens
(`tf.boolean_mask`), draw the log-uniform candidates with TensorFlow's
float64 stateless RNG (`keras.random` folds an int64 seed into int32, so
it would not draw the same words; the float64 `P(k)` is TensorFlow's own
sampler's), and train the sampled softmax through a fused, hand-written
gradient. `tests/training/losses_test.py` holds every piece equal to the
`keras.ops` definition: losses and autodiff gradients within float32
rounding (rtol 1e-5), `P(k)` within 1e-6. The order of operations here is
the one TensorFlow runs have always used (their resumes are bitwise), so
it changes only with the definition's test beside it.

Sampled softmax (the bilm-tf training loss, `tf.nn.sampled_softmax_loss(
..., remove_accidental_hits=True)` with given `sampled_values`, Jean et al.
2015) in fewer passes over the `[N, S]` logits, which dominate its cost
once the biLSTM computes real tokens only. For row `i` with label `y_i`,
state `h_i` and candidates `s_1..s_S` (drawn with replacement, expected
counts `Q(y_i)`, `Q(s_j)`):

    t_i    = h_i . W[y_i] + b[y_i] - log Q(y_i)            the true logit
    z_ij   = h_i . W[s_j] + b[s_j] - log Q(s_j)            sampled logits,
             = -FLOAT_MAX where s_j == y_i                 (accidental hit:
               as `tf.nn.compute_accidental_hits`, the last draw equal
               to `y_i` only, when it was drawn more than once)
    m_i    = max(t_i, max_j z_ij)
    Z_i    = exp(t_i - m_i) + sum_j exp(z_ij - m_i)
    loss_i = m_i + log Z_i - t_i

and, with upstream `g_i = dL/dloss_i`, `p_ij = exp(z_ij - m_i) / Z_i`,
`p_i = exp(t_i - m_i) / Z_i`:

    dL/dz_ij = g_i p_ij                     dL/dt_i = g_i (p_i - 1)
    dL/dh_i  = sum_j dL/dz_ij W[s_j] + dL/dt_i W[y_i]
    dL/dW[s_j] = sum_i dL/dz_ij h_i         dL/dW[y_i] = dL/dt_i h_i
    dL/db[s_j] = sum_i dL/dz_ij             dL/db[y_i] = dL/dt_i

`tf.nn.sampled_softmax_loss` builds the `[N, S + 1]` logits by concat,
adds a dense `[N, S]` accidental-hit matrix, subtracts `log Q` in its own
pass and backpropagates through all of them; here the bias and `-log Q`
ride on the matmul (`bias_add`, fused by oneDNN), hits are written in
place at their few positions, and the backward pass reuses the forward's
`exp(z - m)`. The gradient of `W` and `b` reaches them through `tf.gather`,
so it stays `tf.IndexedSlices` (rows `y` and `s` only).
"""

import math

import numpy as np
import tensorflow as tf

from keras_elmo.training.losses import log_uniform_probability

_MASKED = float(np.finfo(np.float32).min)


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


def pool_size(num_sampled, vocabulary_size):
    """Draws expected to hold `S + 6 sqrt(S)` distinct log-uniform words
    (`E[distinct in n] = sum_k 1 - (1 - P(k))^n`, searched by doubling
    then bisection), at least `S`; capped at 64 V draws."""
    with tf.init_scope():  # NumPy, even while a step is traced
        k = np.arange(vocabulary_size, dtype=np.float64)
        p = np.asarray(log_uniform_probability(k, vocabulary_size, "float64"))
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
            `sampled_softmax_losses`.
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


def sampled_softmax_losses(
    weights, biases, labels, inputs, sampled, true_expected, sampled_expected
):
    """Per-row sampled-softmax cross-entropy, float32.

    Args:
        weights: float32 `[V, P]`, the softmax embeddings (a variable or a
            tensor read from one).
        biases: float32 `[V]`.
        labels: int64 `[N]`, the true word of each row.
        inputs: float32 `[N, P]`, the states that predict `labels`.
        sampled: int64 `[S]`, the candidates (with replacement).
        true_expected: float32 `[N]`, `Q(labels)`: the expected count of
            each label among the `S` draws.
        sampled_expected: float32 `[S]`, `Q(sampled)`.

    Returns:
        float32 `[N]`: `loss_i` above, equal (within float rounding) to
        `tf.nn.sampled_softmax_loss` with `remove_accidental_hits=True`.
    """
    labels = tf.convert_to_tensor(labels, tf.int64)
    sampled = tf.convert_to_tensor(sampled, tf.int64)
    hits = tf.raw_ops.ComputeAccidentalHits(
        true_classes=labels[:, None],
        sampled_candidates=sampled,
        num_true=1,
    )
    hit_positions = tf.stack([tf.cast(hits.indices, tf.int64), hits.ids], 1)
    true_offset = -tf.math.log(tf.reshape(true_expected, [-1]))
    sampled_offset = -tf.math.log(sampled_expected)

    @tf.custom_gradient
    def losses(inputs, true_w, true_b, sampled_w, sampled_b):
        true = tf.reduce_sum(inputs * true_w, 1) + true_b + true_offset
        logits = tf.nn.bias_add(
            tf.matmul(inputs, sampled_w, transpose_b=True),
            sampled_b + sampled_offset,
        )
        logits = tf.tensor_scatter_nd_update(
            logits,
            hit_positions,
            tf.fill(tf.shape(hit_positions)[:1], _MASKED),
        )
        peak = tf.maximum(true, tf.reduce_max(logits, 1))  # [N]
        sampled_exp = tf.exp(logits - peak[:, None])  # [N, S]
        true_exp = tf.exp(true - peak)
        total = true_exp + tf.reduce_sum(sampled_exp, 1)
        loss = peak + tf.math.log(total) - true

        def grad(upstream):
            scale = upstream / total
            d_logits = sampled_exp * scale[:, None]  # [N, S]
            d_true = true_exp * scale - upstream  # [N]
            d_inputs = tf.matmul(d_logits, sampled_w) + d_true[:, None] * true_w
            d_sampled_w = tf.matmul(d_logits, inputs, transpose_a=True)
            return (
                d_inputs,
                d_true[:, None] * inputs,
                d_true,
                d_sampled_w,
                tf.reduce_sum(d_logits, 0),
            )

        return loss, grad

    return losses(
        inputs,
        tf.gather(weights, labels),
        tf.gather(biases, labels),
        tf.gather(weights, sampled),
        tf.gather(biases, sampled),
    )
