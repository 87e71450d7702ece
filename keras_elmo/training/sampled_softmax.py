"""Sampled-softmax cross-entropy with a fused, hand-written gradient.

The same loss as `tf.nn.sampled_softmax_loss(..., remove_accidental_hits=
True)` with given `sampled_values` (Jean et al. 2015, the bilm-tf training
loss), in fewer passes over the `[N, S]` logits, which dominate its cost
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

import numpy as np
import tensorflow as tf

_MASKED = float(np.finfo(np.float32).min)


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
