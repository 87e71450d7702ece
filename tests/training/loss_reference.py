"""The NumPy reference of the biLM loss, float64, for the loss tests.

Written from the formulas alone (no keras, no TensorFlow): the
log-uniform probability of TensorFlow's `log_uniform_candidate_sampler`,
the full-softmax cross-entropy and the sampled softmax with accidental
hits removed as `tf.nn.compute_accidental_hits` does (the last draw equal
to the label only).
"""

import math

import numpy as np


def log_uniform_probability(k, vocabulary_size):
    """`P(k) = (log(k + 2) - log(k + 1)) / log(V + 1)`, float64."""
    k = np.asarray(k, np.float64)
    return (np.log(k + 2.0) - np.log(k + 1.0)) / math.log(vocabulary_size + 1)


def logsumexp(x):
    peak = x.max(axis=-1, keepdims=True)
    return (peak + np.log(np.exp(x - peak).sum(-1, keepdims=True)))[..., 0]


def real_tokens(hidden, targets):
    """`(states [N, P], labels [N])` of `targets >= 0`, row-major."""
    targets = np.asarray(targets).reshape(-1)
    hidden = np.asarray(hidden, np.float64).reshape(len(targets), -1)
    keep = targets >= 0
    return hidden[keep], targets[keep]


def full_softmax_losses(embeddings, bias, hidden, targets):
    """Per real token `logsumexp(h W^T + b) - (h W^T + b)[y]`, float64."""
    h, y = real_tokens(hidden, targets)
    logits = h @ np.asarray(embeddings, np.float64).T + bias
    return logsumexp(logits) - logits[np.arange(len(y)), y]


def sampled_softmax_losses(embeddings, bias, hidden, targets, sampled):
    """Per real token sampled-softmax cross-entropy over `sampled` (drawn
    with replacement, `Q(k) = S P(k)`), accidental hits masked."""
    h, y = real_tokens(hidden, targets)
    w = np.asarray(embeddings, np.float64)
    b = np.asarray(bias, np.float64)
    s = np.asarray(sampled)

    def log_q(k):
        return np.log(len(s) * log_uniform_probability(k, len(w)))

    true = np.sum(h * w[y], 1) + b[y] - log_q(y)
    logits = h @ w[s].T + b[s] - log_q(s)
    last = {word: j for j, word in enumerate(s)}
    for i, label in enumerate(y):
        if label in last:
            logits[i, last[label]] = -np.inf
    return logsumexp(np.concatenate([true[:, None], logits], 1)) - true
