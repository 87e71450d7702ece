"""The biLM training loss defined once, in `keras.ops`: full, sampled softmax.

This is the executable definition every backend trains with (JAX and
PyTorch through autodiff). TensorFlow's trainer runs the fast path of
`fused_loss` (real tokens gathered, a fused sampled-softmax gradient,
its float64 stateless sampler), which `tests/training/losses_test.py`
holds equal to this definition and its autodiff gradient. Static shapes
(for `jax.jit`): instead of gathering the real tokens, every position
is computed and the padding ones (`targets < 0`) are masked out of the
sum. For one direction with states `h` `[B, T1, P]`, targets
`y` `[B, T1]` (-1 at padding) and the softmax `W` `[V, P]`, `b` `[V]`:

    CE_i  = logsumexp_v(h_i . W[v] + b[v]) - (h_i . W[y_i] + b[y_i])
    sum   = sum over real i of CE_i,      count = #{i : y_i >= 0}

and the training loss of a step is

    loss = 0.5 * (sum_fwd / max(N_fwd, 1) + sum_bwd / max(N_bwd, 1)).

Sampled softmax (Jean et al. 2015; `tf.nn.sampled_softmax_loss` with
`remove_accidental_hits=True`): with `S` log-uniform candidates
`s_1..s_S` drawn with replacement and expected counts `Q(k) = S P(k)`,

    t_i   = h_i . W[y_i] + b[y_i] - log Q(y_i)
    z_ij  = h_i . W[s_j] + b[s_j] - log Q(s_j),  masked where s_j == y_i
            (the last draw equal to y_i only, as TensorFlow's
            `compute_accidental_hits`)
    CE_i  = logsumexp(t_i, z_i1..z_iS) - t_i

Logits and the softmax are float32 whatever the compute dtype.
"""

import math

import keras
import numpy as np
from keras import ops
from keras import random

# The logit of an accidental hit (TensorFlow's: the lowest float32).
_MASKED = float(np.finfo(np.float32).min)


def _torch_uniform(num_sampled, seed):
    """`U[0, 1)` float32 `[S]` from a torch generator seeded by the `[2]`
    uint32 `seed` `(a, b)` as `a * 2**32 + b` (distinct pairs, distinct
    seeds)."""
    import torch

    high, low = (int(w) for w in np.asarray(ops.convert_to_numpy(seed)))
    generator = torch.Generator().manual_seed((high << 32) | low)
    u = torch.rand((num_sampled,), generator=generator, dtype=torch.float32)
    return ops.convert_to_tensor(u)


def log_uniform_probability(k, vocabulary_size, dtype="float32"):
    """`P(k) = (log(k + 2) - log(k + 1)) / log(V + 1)` in `dtype`, for
    int ids `k` (TensorFlow's `log_uniform_candidate_sampler`), computed
    as `log1p(1 / (k + 1))`: the difference of two logs near `log V`
    loses most of its digits in float32 for large `k`."""
    k = ops.cast(k, dtype)
    return ops.log1p(1.0 / (k + 1.0)) / math.log(vocabulary_size + 1)


def log_uniform_candidates(num_sampled, vocabulary_size, seed):
    """`S` log-uniform word ids, drawn with replacement, int32 `[S]`.

    `floor(exp(u log(V + 1))) - 1` for `u ~ U[0, 1)` (`keras.random`,
    so `seed`, an int or a `[2]` uint32 seed tensor, makes the draw
    reproducible), clipped to `[0, V)`. On PyTorch, whose `keras.random`
    takes no seed tensor, a `[2]` seed `(a, b)` seeds a torch generator
    with the 64-bit `a * 2**32 + b` (`_torch_uniform`).
    """
    if isinstance(seed, (int, random.SeedGenerator)):
        u = random.uniform((num_sampled,), seed=seed, dtype="float32")
    elif keras.config.backend() == "torch":
        u = _torch_uniform(num_sampled, seed)
    else:
        seed = ops.convert_to_tensor(seed, "uint32")  # a [2] seed tensor
        u = random.uniform((num_sampled,), seed=seed, dtype="float32")
    sampled = ops.floor(ops.exp(u * math.log(vocabulary_size + 1))) - 1.0
    return ops.cast(ops.clip(sampled, 0, vocabulary_size - 1), "int32")


def _flat_real(hidden, targets):
    """`(states [M, P] float32, labels [M] int32 (0 at padding),
    real [M] float32 in {0, 1})`, `M = B * T1`."""
    width = ops.shape(hidden)[-1]
    states = ops.reshape(ops.cast(hidden, "float32"), (-1, width))
    targets = ops.reshape(ops.cast(targets, "int32"), (-1,))
    real = targets >= 0
    labels = ops.where(real, targets, ops.zeros_like(targets))
    return states, labels, ops.cast(real, "float32")


def full_softmax_loss_sum(embeddings, bias, hidden, targets):
    """Summed full-softmax cross-entropy of one direction.

    Args:
        embeddings: float32 `[V, P]`, the softmax `W`.
        bias: float32 `[V]`.
        hidden: float `[B, T1, P]`, the states that predict `targets`.
        targets: int `[B, T1]`, -1 at padding.

    Returns:
        `(loss_sum, token_count)`, float32 scalars.
    """
    states, labels, real = _flat_real(hidden, targets)
    weights = ops.cast(embeddings, "float32")
    logits = ops.matmul(states, ops.transpose(weights)) + bias  # [M, V]
    true = ops.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
    losses = ops.logsumexp(logits, axis=1) - true
    return ops.sum(losses * real), ops.sum(real)


def accidental_hits(labels, sampled, vocabulary_size):
    """float32 `[M, S]`, 1 where `sampled[j] == labels[i]` and `j` is
    the last position of that word among the candidates (TensorFlow's
    `compute_accidental_hits` keeps one hit per word, the last)."""
    positions = ops.arange(ops.shape(sampled)[0], dtype="int32")
    last = ops.segment_max(
        positions, sampled, num_segments=vocabulary_size, sorted=False
    )
    is_last = ops.take(last, sampled) == positions  # [S]
    hit = ops.logical_and(labels[:, None] == sampled[None, :], is_last[None])
    return ops.cast(hit, "float32")


def sampled_softmax_loss_sum(
    embeddings, bias, hidden, targets, sampled, num_sampled=None
):
    """Summed sampled-softmax cross-entropy of one direction over given
    candidates (drawn with replacement, `Q(k) = S P(k)`).

    Args:
        embeddings, bias, hidden, targets: as `full_softmax_loss_sum`.
        sampled: int `[S]` candidate word ids (`log_uniform_candidates`).
        num_sampled: int `S` of the expected counts (default: the
            length of `sampled`).

    Returns:
        `(loss_sum, token_count)`, float32 scalars.
    """
    vocabulary_size = ops.shape(embeddings)[0]
    sampled = ops.cast(sampled, "int32")
    count = num_sampled or ops.shape(sampled)[0]
    states, labels, real = _flat_real(hidden, targets)
    weights = ops.cast(embeddings, "float32")
    true_q = count * log_uniform_probability(labels, vocabulary_size)
    sampled_q = count * log_uniform_probability(sampled, vocabulary_size)
    true = (
        ops.sum(states * ops.take(weights, labels, axis=0), axis=1)
        + ops.take(bias, labels)
        - ops.log(true_q)
    )  # [M]
    logits = (
        ops.matmul(states, ops.transpose(ops.take(weights, sampled, axis=0)))
        + ops.take(bias, sampled)
        - ops.log(sampled_q)
    )  # [M, S]
    hits = accidental_hits(labels, sampled, vocabulary_size)
    logits = ops.where(hits > 0, _MASKED, logits)
    all_logits = ops.concatenate([true[:, None], logits], axis=1)
    losses = ops.logsumexp(all_logits, axis=1) - true
    return ops.sum(losses * real), ops.sum(real)


def direction_loss_sum(
    embeddings, bias, hidden, targets, num_sampled=0, seed=None
):
    """`(loss_sum, token_count)` of one direction: the full softmax when
    `num_sampled` is 0 or not below the vocabulary size, else the sampled
    one over `log_uniform_candidates(num_sampled, V, seed)`."""
    vocabulary_size = ops.shape(embeddings)[0]
    if not num_sampled or num_sampled >= vocabulary_size:
        return full_softmax_loss_sum(embeddings, bias, hidden, targets)
    sampled = log_uniform_candidates(num_sampled, vocabulary_size, seed)
    return sampled_softmax_loss_sum(
        embeddings, bias, hidden, targets, sampled, num_sampled
    )


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
