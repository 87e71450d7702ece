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

The step itself and its gradient are the cell's (`lstm_cell.step`,
`lstm_cell.step_backward`) on the `n_t` running rows; this module owns
only the packed layout and the loop over it. The loop needs per-step
shapes that change inside it, which `keras.ops.scan` cannot express, so
it uses `tf.while_loop` and `tf.TensorArray` directly (the package runs
on the TensorFlow backend only), and XLA, whose shapes must be static,
cannot compile it (`available`): there the padded loop runs.
"""

import tensorflow as tf

from keras_elmo.ops import lstm_cell


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

    The cell of `keras_elmo.ops.lstm_cell` (maths and gradient there),
    for the running rows only. At step `t`, with `n = batch_sizes[t]` and
    `o = sum(batch_sizes[:t])`, for each direction `d`:

        z = gates_in[o:o+n, d] + h[:n, d] U_d            # blocks i, j, f, o
        c[:n, d] = clip(sig(i) tanh(j) + sig(f) c[:n, d], cell_clip)
        h[:n, d] = clip((sig(o) tanh(c[:n, d])) W_proj_d, projection_clip)

    and rows `n:` keep their state. The gradient is the cell's, written by
    hand: the backward loop runs the two recurrent matmuls of each step on
    the same `n` rows, and the kernel gradients are one matmul each over
    all packed steps.

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
    """The loop: `(outputs, h, c, saved)`, with `outputs` the packed `h`
    and, if `saving`, `saved` the packed `(h, i, j, f, o, c_raw, h_raw)`
    for the gradient."""
    dtype = gates_in.dtype
    offsets = _offsets(batch_sizes)
    steps = tf.size(batch_sizes)
    likes = (h0,) + (c0,) * 5 + (h0,)
    dtypes = (dtype,) + (c0.dtype,) * 5 + (dtype,)
    count = len(likes) if saving else 1
    arrays = [_array(dtypes[i], likes[i]) for i in range(count)]

    def body(t, h, c, arrays):
        n, start = batch_sizes[t], offsets[t]
        h_new, c_new, gates, c_raw, h_raw = lstm_cell.step(
            gates_in[start : start + n], h[:n], c[:n], kernels, clips, axis=1
        )
        values = (h_new,) + gates + (c_raw, h_raw)
        arrays = [a.write(t, v) for a, v in zip(arrays, values)]
        h = tf.ensure_shape(tf.concat([h_new, h[n:]], 0), h.shape)
        c = tf.ensure_shape(tf.concat([c_new, c[n:]], 0), c.shape)
        return t + 1, h, c, arrays

    _, h, c, arrays = tf.while_loop(
        lambda t, *_: t < steps, body, (tf.constant(0), h0, c0, arrays)
    )
    packed = [_concat(a, dtypes[i], likes[i]) for i, a in enumerate(arrays)]
    return packed[0], h, c, (packed if saving else None)


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


def _backward(batch_sizes, initial, kernels, clips, saved, upstream):
    """Gradients of `(gates_in, batch_sizes, h0, c0, U, W_proj)`: the
    cell's `step_backward` on each step's running rows, in reverse; rows
    past their last step keep their gradient."""
    h0, c0 = initial
    d_outputs, d_h, d_c = upstream
    dtype = h0.dtype
    hs, *gates, c_raw, h_raw = saved
    c_prev = _previous(lstm_cell.clip(c_raw, clips[0]), c0, batch_sizes)
    h_prev = _previous(hs, h0, batch_sizes)
    factors, m = lstm_cell.backward_factors(gates, c_prev, c_raw, h_raw, clips)
    kernels_t = lstm_cell.transposed_kernels(kernels)
    offsets = _offsets(batch_sizes)
    arrays = (_array(dtype, factors.to_z), _array(dtype, h0))

    def body(t, dh, dc, arrays):
        n, start = batch_sizes[t], offsets[t]
        here = slice(start, start + n)
        dz, dh_raw, dh_prev, dc_prev = lstm_cell.step_backward(
            dh[:n] + d_outputs[here],
            dc[:n],
            factors.at(here),
            kernels_t,
            axis=1,
        )
        arrays = (arrays[0].write(t, dz), arrays[1].write(t, dh_raw))
        dh = tf.ensure_shape(tf.concat([dh_prev, dh[n:]], 0), dh.shape)
        dc = tf.ensure_shape(tf.concat([dc_prev, dc[n:]], 0), dc.shape)
        return t - 1, dh, dc, arrays

    steps = tf.size(batch_sizes)
    _, dh0, dc0, arrays = tf.while_loop(
        lambda t, *_: t >= 0, body, (steps - 1, d_h, d_c, arrays)
    )
    dz = _concat(arrays[0], dtype, factors.to_z)
    dh_raw = _concat(arrays[1], dtype, h0)
    d_recurrent, d_projection = lstm_cell.kernel_gradients(
        h_prev, dz, m, dh_raw
    )
    return dz, None, tf.cast(dh0, dtype), dc0, d_recurrent, d_projection


_LOOPS = lstm_cell.CompiledLoops(_forward, _backward)
