"""`packed_lstm_recurrence`: the LSTM time loop over real tokens only.

The padded loop (`lstm_recurrence`) computes every row at every step, so
on real text, where sentences of 3 to 64 words share a batch, most of its
work is on padding. Here the rows are sorted by length (longest first) and
the real positions are *packed* time-major, as PyTorch's `PackedSequence`
does: step `t` holds the `n_t` rows still running, `n_0 >= n_1 >= ...`,
and packed position `offset_t + b` is row `b` at step `t`. Each step then
multiplies only those `n_t` rows, and nothing at all is computed for
padding (neither the input products nor the recurrence nor, in training,
the gradient).

This needs per-step shapes that change inside the loop, which
`keras.ops.scan` cannot express, so this module uses `tf.while_loop` and
`tf.TensorArray` directly: the package runs on the TensorFlow backend only
(DESIGN.md), and the recurrence is the one place where that matters.
"""

import tensorflow as tf

from keras_elmo.ops.lstm_recurrence import CompiledLoops
from keras_elmo.ops.lstm_recurrence import _clip
from keras_elmo.ops.lstm_recurrence import _passes
from keras_elmo.ops.lstm_recurrence import gate_gradient_factors


def available():
    """Whether the packed loop can run here: not inside an XLA-compiled
    function (`jit_compile=True`), whose shapes must be static; callers
    then run the padded loop. (TensorFlow has no public test for this;
    `control_flow_util` is what its own control flow uses.)"""
    from tensorflow.python.ops import control_flow_util

    graph = tf.compat.v1.get_default_graph()
    return not control_flow_util.GraphOrParentsInXlaContext(graph)


def packing(lengths):
    """The packed layout of a right-padded batch with these lengths.

    Args:
        lengths: int `[B]`, the real steps of each row.

    Returns:
        `(batch_sizes, indices, order)`:
        `batch_sizes` int32 `[S]` (`S = max(lengths)`), rows still running
        at each step; `indices` int32 `[2, N, 2]` (`N = sum(lengths)`),
        the `(row, position)` each packed step reads, per direction: the
        forward direction reads position `t`, the backward one position
        `n_b - 1 - t` (each row reversed over its own length); `order`
        int32 `[B]`, the rows by decreasing length (ties keep their
        order), so sorted row `k` is row `order[k]`.
    """
    lengths = tf.cast(lengths, tf.int32)
    order = tf.argsort(lengths, direction="DESCENDING", stable=True)
    order = tf.cast(order, tf.int32)
    sorted_lengths = tf.gather(lengths, order)
    steps = tf.maximum(tf.reduce_max(tf.concat([sorted_lengths, [0]], 0)), 0)
    running = tf.range(steps)[:, None] < sorted_lengths[None, :]  # [S, B]
    batch_sizes = tf.reduce_sum(tf.cast(running, tf.int32), axis=1)
    # Row-major over [S, B]: time-major, sorted rows ascending in a step.
    step_row = tf.cast(tf.where(running), tf.int32)  # [N, 2]
    t, k = step_row[:, 0], step_row[:, 1]
    rows = tf.gather(order, k)
    backward_t = tf.gather(sorted_lengths, k) - 1 - t
    indices = tf.stack(
        [tf.stack([rows, t], -1), tf.stack([rows, backward_t], -1)]
    )
    return batch_sizes, indices, order


def pack(inputs, indices):
    """`[B, T, D]` -> `[N, 2, D]`: both directions' packed steps."""
    return tf.stack(
        [tf.gather_nd(inputs, indices[0]), tf.gather_nd(inputs, indices[1])],
        axis=1,
    )


def unpack(packed, indices, shape):
    """`[N, 2, D]` -> `[B, T, 2D]`: forward and backward halves at their
    positions (the backward one restored to reading order), zero at
    padding. `shape` is `(B, T)`."""
    width = tf.shape(packed)[-1]
    full = tf.concat([tf.cast(shape, tf.int32), [width]], 0)
    return tf.concat(
        [
            tf.scatter_nd(indices[0], packed[:, 0], full),
            tf.scatter_nd(indices[1], packed[:, 1], full),
        ],
        axis=-1,
    )


def packed_lstm_recurrence(
    gates_in,
    batch_sizes,
    h0,
    c0,
    recurrent_kernel,
    projection_kernel,
    cell_clip=None,
    projection_clip=None,
    save_for_backward=True,
):
    """Runs the projected, clipped LSTM of both directions over packed steps.

    The same step as `lstm_recurrence` (see there), for the running rows
    only. At step `t`, with `n = batch_sizes[t]` and `o = sum(batch_sizes
    [:t])`, for each direction `d`:

        z = gates_in[o:o+n, d] + h[:n, d] U_d            # blocks i, j, f, o
        c[:n, d] = clip(sig(i) tanh(j) + sig(f) c[:n, d], cell_clip)
        h[:n, d] = clip((sig(o) tanh(c[:n, d])) W_proj_d, projection_clip)

    and rows `n:` keep their state. The gradient is written by hand, as in
    `lstm_recurrence`: the backward loop runs the two recurrent matmuls of
    each step on the same `n` rows, and the kernel gradients are one
    matmul each over all packed steps.

    Args:
        gates_in: float `[N, 2, 4H]`: `x W + b` (with the forget bias) for
            every packed step.
        batch_sizes: int32 `[S]`, non-increasing, summing to `N`.
        h0: `[B, 2, P]` initial outputs of the rows in sorted order.
        c0: `[B, 2, H]` initial cell states.
        recurrent_kernel: `[2, P, 4H]`, `U`.
        projection_kernel: `[2, H, P]`, `W_proj`.
        cell_clip: float or None.
        projection_clip: float or None.
        save_for_backward: bool. False for inference (nothing is kept for
            the gradient; TensorFlow's own gradient still applies).

    Returns:
        `(outputs, h, c)`: `outputs` `[N, 2, P]` holds `h` after each
        packed step; `h` `[B, 2, P]` and `c` `[B, 2, H]` are each row's
        state after its last step (its initial state if it has none), in
        the dtypes of `h0` and `c0`.
    """
    return _LOOPS(
        gates_in,
        tf.cast(batch_sizes, tf.int32),
        h0,
        c0,
        (recurrent_kernel, projection_kernel),
        (cell_clip, projection_clip),
        save_for_backward,
    )


def _matmul_both(x, kernel):
    """`[n, 2, M] x [2, M, K] -> [n, 2, K]`: one plain matmul a direction
    (faster on CPU than a batched one, see `_per_direction_matmul`)."""
    return tf.stack(
        [tf.matmul(x[:, 0], kernel[0]), tf.matmul(x[:, 1], kernel[1])], axis=1
    )


def _offsets(batch_sizes):
    return tf.concat([[0], tf.cumsum(batch_sizes)], 0)


def _array(dtype, like):
    """Per-step `[n, 2, D]` writes, `D` the last axis of `like`."""
    return tf.TensorArray(
        dtype,
        size=0,
        dynamic_size=True,
        infer_shape=False,
        element_shape=tf.TensorShape([None, 2, like.shape[-1]]),
    )


def _concat(array, dtype, like):
    """The packed `[N, 2, D]` from per-step `[n, 2, D]` writes
    (also when there are no steps)."""
    empty = tf.zeros([0, 2, tf.shape(like)[-1]], dtype)
    return tf.cond(array.size() > 0, lambda: array.concat(), lambda: empty)


def _forward(gates_in, batch_sizes, h0, c0, kernels, clips, saving):
    """The loop: packed outputs, final states and, if `saving`, the packed
    `(in, candidate, forget, out, c_raw, h_raw)` for the gradient."""
    recurrent_kernel, projection_kernel = kernels
    cell_clip, projection_clip = clips
    dtype = gates_in.dtype
    offsets = _offsets(batch_sizes)
    steps = tf.size(batch_sizes)
    names = ("h", "in", "candidate", "forget", "out", "c_raw", "h_raw")
    likes = (h0,) + (c0,) * 5 + (h0,)
    dtypes = (dtype,) + (tf.float32,) * 5 + (dtype,)
    count = len(names) if saving else 1
    arrays = [_array(dtypes[i], likes[i]) for i in range(count)]

    def body(t, h, c, arrays):
        n, start = batch_sizes[t], offsets[t]
        h_prev, c_prev = h[:n], c[:n]
        z = gates_in[start : start + n] + _matmul_both(h_prev, recurrent_kernel)
        i, j, f, o = tf.split(tf.cast(z, tf.float32), 4, axis=-1)
        gates = (tf.sigmoid(i), tf.tanh(j), tf.sigmoid(f), tf.sigmoid(o))
        c_raw = gates[0] * gates[1] + gates[2] * c_prev
        c_new = _clip(c_raw, cell_clip)
        h_raw = _matmul_both(
            tf.cast(gates[3] * tf.tanh(c_new), dtype), projection_kernel
        )
        h_new = _clip(h_raw, projection_clip)
        values = (h_new,) + gates + (c_raw, h_raw)
        arrays = [a.write(t, v) for a, v in zip(arrays, values)]
        h = tf.ensure_shape(tf.concat([h_new, h[n:]], 0), h.shape)
        c = tf.ensure_shape(tf.concat([c_new, c[n:]], 0), c.shape)
        return t + 1, h, c, arrays

    _, h, c, arrays = tf.while_loop(
        lambda t, *_: t < steps, body, (tf.constant(0), h0, c0, arrays)
    )
    packed = [_concat(a, dtypes[i], likes[i]) for i, a in enumerate(arrays)]
    return packed, h, c


def _forward_only(cell_clip, projection_clip):
    def run(gates_in, batch_sizes, h0, c0, recurrent_kernel, projection_kernel):
        (outputs,), h, c = _forward(
            gates_in,
            batch_sizes,
            h0,
            c0,
            (recurrent_kernel, projection_kernel),
            (cell_clip, projection_clip),
            saving=False,
        )
        return outputs, h, c

    return run


def _with_gradient(cell_clip, projection_clip):
    @tf.custom_gradient
    def run(gates_in, batch_sizes, h0, c0, recurrent_kernel, projection_kernel):
        kernels = (recurrent_kernel, projection_kernel)
        clips = (cell_clip, projection_clip)
        saved, h, c = _forward(
            gates_in, batch_sizes, h0, c0, kernels, clips, saving=True
        )

        def grad(d_outputs, d_h, d_c):
            return _backward(
                batch_sizes,
                h0,
                c0,
                kernels,
                clips,
                saved,
                (d_outputs, d_h, d_c),
            )

        return (saved[0], h, c), grad

    return run


def _previous(packed, initial, batch_sizes):
    """Each packed step's previous state: `[N, 2, D]` from the packed
    states after each step and the `[B, 2, D]` initial ones."""
    offsets = _offsets(batch_sizes)
    total = offsets[-1]
    step = tf.repeat(tf.range(tf.size(batch_sizes)), batch_sizes)
    row = tf.range(total) - tf.gather(offsets, step)
    before = tf.where(
        step > 0, tf.gather(offsets, tf.maximum(step - 1, 0)) + row, total + row
    )
    return tf.gather(tf.concat([packed, initial], 0), before)


def _backward(batch_sizes, h0, c0, kernels, clips, saved, upstream):
    """Gradients of `run`'s inputs; the per-step formulas are those of
    `lstm_recurrence._backward` with every step real."""
    recurrent_kernel, projection_kernel = kernels
    cell_clip, projection_clip = clips
    dtype = h0.dtype
    hs, in_gate, candidate, forget_gate, out_gate, c_raw, h_raw = saved
    d_outputs, d_h, d_c = (
        tf.zeros_like(like, tf.float32) if g is None else tf.cast(g, tf.float32)
        for g, like in zip(upstream, (hs, h0, c0))
    )
    c_prev = _previous(_clip(c_raw, cell_clip), c0, batch_sizes)
    h_prev = _previous(hs, h0, batch_sizes)
    tanh_c = tf.tanh(_clip(c_raw, cell_clip))
    cell_passes = _passes(c_raw, cell_clip)
    to_h_raw = _passes(tf.cast(h_raw, tf.float32), projection_clip)
    m_to_c_raw, to_z = gate_gradient_factors(
        (in_gate, candidate, forget_gate, out_gate), c_prev, tanh_c, cell_passes
    )
    projection_t = tf.transpose(projection_kernel, (0, 2, 1))
    recurrent_t = tf.transpose(recurrent_kernel, (0, 2, 1))
    offsets = _offsets(batch_sizes)
    arrays = (_array(dtype, to_z), _array(dtype, h0))

    def body(t, dh, dc, arrays):
        n, start = batch_sizes[t], offsets[t]
        here = slice(start, start + n)
        dh_now = dh[:n] + d_outputs[here]
        d_h_raw = tf.cast(dh_now * to_h_raw[here], dtype)
        dm = tf.cast(_matmul_both(d_h_raw, projection_t), tf.float32)
        dc_raw = dc[:n] * cell_passes[here] + dm * m_to_c_raw[here]
        dz = tf.concat([dc_raw, dc_raw, dc_raw, dm], axis=-1) * to_z[here]
        dz = tf.cast(dz, dtype)
        dh_prev = tf.cast(_matmul_both(dz, recurrent_t), tf.float32)
        dc_prev = dc_raw * forget_gate[here]
        arrays = (arrays[0].write(t, dz), arrays[1].write(t, d_h_raw))
        dh = tf.ensure_shape(tf.concat([dh_prev, dh[n:]], 0), dh.shape)
        dc = tf.ensure_shape(tf.concat([dc_prev, dc[n:]], 0), dc.shape)
        return t - 1, dh, dc, arrays

    steps = tf.size(batch_sizes)
    _, dh0, dc0, arrays = tf.while_loop(
        lambda t, *_: t >= 0, body, (steps - 1, d_h, d_c, arrays)
    )
    dz = _concat(arrays[0], dtype, to_z)
    d_h_raw = _concat(arrays[1], dtype, h0)
    d_recurrent = _contract(h_prev, dz)
    d_projection = _contract(tf.cast(out_gate * tanh_c, dtype), d_h_raw)
    # Gradients of (gates_in, real, h0, c0, recurrent, projection kernel).
    return dz, None, tf.cast(dh0, dtype), dc0, d_recurrent, d_projection


def _contract(a, b):
    """`sum_n a[n, d]^T b[n, d]`: `[N, 2, M]`, `[N, 2, K]` -> `[2, M, K]`."""
    return tf.matmul(tf.transpose(a, (1, 2, 0)), tf.transpose(b, (1, 0, 2)))


_LOOPS = CompiledLoops(_with_gradient, _forward_only)
