"""The LSTM time loops: padded (`lstm_recurrence`) and packed
(`packed_lstm_recurrence`), both driving `lstm_cell.step` and its gradient.

The padded loop: each step runs `lstm_cell.step` on every row of the
batch, and a row's state is held unchanged through its padded steps, so
its final state is the one after its last real step. Every step has the
same shapes, so the loop is a `keras.ops.scan` that any compiler accepts:
it is the loop of XLA-compiled calls (`jit_compile=True`), where the
packed loop (`packed_lstm_recurrence`, real tokens only, per-step batch sizes)
cannot run, and of `ResidualBiLSTM.packed = False`, the reference for
comparisons. Its gradient is the cell's hand-written one
(`lstm_cell.step_backward`) run in reverse over the same steps, with the
held state's gradient passed straight through padding.

`neutral_lstm_recurrence` is the same forward scan without TensorFlow
(no `tf.function`, no hand-written gradient: the backend's autodiff of
the scan): the loop of the other Keras backends (JAX, PyTorch).

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

import keras
import tensorflow as tf
from keras import ops

from keras_elmo.ops import lstm_cell


def lstm_recurrence(
    gates_in,
    real,
    h0,
    c0,
    recurrent_kernel,
    projection_kernel,
    cell_clip=None,
    projection_clip=None,
    save_for_backward=True,
):
    """Runs a projected, clipped LSTM over time, both directions at once.

    The recurrent part of `ResidualBiLSTM`: the input products are already
    in `gates_in`, so each step only multiplies by `U` and `W_proj`. At
    step `t`, for each direction `d` and row `b` (the cell's maths and
    gradient: `keras_elmo.ops.lstm_cell`):

        z = gates_in[t] + h U                    # blocks i, j, f, o
        c' = clip(sigmoid(i) * tanh(j) + sigmoid(f) * c, cell_clip)
        h' = clip((sigmoid(o) * tanh(c')) W_proj, projection_clip)
        h, c = (h', c') if real[t] else (h, c)  # held through padding

    The gradient is written by hand: the forward loop saves the gate
    activations and unclipped values, the backward loop runs in reverse
    doing only the two recurrent matmuls per step (`dh W_proj^T` and
    `dz U^T`) and a few elementwise products prepared for all steps at
    once, and the kernel gradients are one batched matmul each over all
    steps afterwards, so backward costs about twice the forward, as the
    FLOPs do (TensorFlow's automatic gradient of the loop costs several
    times more). The values equal that automatic gradient up to rounding;
    clip gradients pass where `-clip <= x <= clip`, as `ops.clip`'s do.

    Under a mixed-precision compute dtype (e.g. `bfloat16`) the gates and
    the cell state are computed in float32 (in float64 for float64
    inputs: `lstm_cell.state_dtype`); the matmuls run in the dtype of
    `gates_in`.

    Args:
        gates_in: float `[T, 2, B, 4H]`: `x_t W + b` (including the forget
            bias) for every step; axis 1 is the direction.
        real: bool `[T, B]`: False where a row's state is held.
        h0: `[2, B, P]` initial outputs.
        c0: `[2, B, H]` initial cell states.
        recurrent_kernel: `[2, P, 4H]`, `U`.
        projection_kernel: `[2, H, P]`, `W_proj`.
        cell_clip: float or None.
        projection_clip: float or None.
        save_for_backward: bool. False for inference: the loop then
            carries only `(h, c)` (no gate activations are stacked, no
            hand-written gradient; TensorFlow's own gradient still applies
            if one is asked for). Same outputs either way.

    Returns:
        `(outputs, h, c)`: `outputs` `[T, 2, B, P]` holds `h` after each
        step (the held value at steps that are not real; callers mask
        it), `h` `[2, B, P]` and `c` `[2, B, H]` are the final states in
        the dtypes of `h0` and `c0`.
    """
    return _PADDED_LOOPS(
        gates_in,
        ops.cast(real, "bool"),
        h0,
        c0,
        (recurrent_kernel, projection_kernel),
        (cell_clip, projection_clip),
        save_for_backward,
    )


def neutral_lstm_recurrence(
    gates_in,
    real,
    h0,
    c0,
    recurrent_kernel,
    projection_kernel,
    cell_clip=None,
    projection_clip=None,
    save_for_backward=True,
):
    """`lstm_recurrence` in `keras.ops` only, for backends other than
    TensorFlow: the same scan of `lstm_cell.step` over every step and
    the same dtypes (matmuls in the dtype of `gates_in`, the cell state
    in `lstm_cell.state_dtype` of it, the final `c` in the dtype of
    `c0`). On JAX with `save_for_backward` its gradient is the same
    hand-written one (`_padded_backward` under `keras.ops.custom_gradient`,
    traced in place by `jax.jit`): JAX's autodiff of the scan stacks
    every step's residuals and accumulates the kernel gradients step by
    step, which costs more than the hand-written gradient's two recurrent
    matmuls per step (docs/BACKENDS.md). Elsewhere (PyTorch) the backend's
    own autodiff differentiates the scan. Arguments and returns as
    `lstm_recurrence`.
    """
    if save_for_backward and keras.config.backend() == "jax":
        gates_in = ops.convert_to_tensor(gates_in)
        dtype = keras.backend.standardize_dtype(gates_in.dtype)
        c0 = ops.convert_to_tensor(c0)
        c0_dtype = keras.backend.standardize_dtype(c0.dtype)
        run = _PADDED_LOOPS.with_gradient((cell_clip, projection_clip))
        outputs, h, c = run(
            gates_in,
            ops.cast(real, "bool"),
            ops.cast(h0, dtype),
            ops.cast(c0, lstm_cell.state_dtype(dtype)),
            ops.cast(recurrent_kernel, dtype),
            ops.cast(projection_kernel, dtype),
        )
        return outputs, h, ops.cast(c, c0_dtype)
    gates_in = ops.convert_to_tensor(gates_in)
    dtype = keras.backend.standardize_dtype(gates_in.dtype)
    c0 = ops.convert_to_tensor(c0)
    c0_dtype = keras.backend.standardize_dtype(c0.dtype)
    kernels = (
        ops.cast(recurrent_kernel, dtype),
        ops.cast(projection_kernel, dtype),
    )
    outputs, h, c, _ = _padded_forward(
        gates_in,
        ops.cast(real, "bool"),
        ops.cast(h0, dtype),
        ops.cast(c0, lstm_cell.state_dtype(dtype)),
        kernels,
        (cell_clip, projection_clip),
        saving=False,
    )
    return outputs, h, ops.cast(c, c0_dtype)


def _step_indices(steps):
    """What the loops scan: the step index, to slice captured `[T, ...]`
    tensors with (a leading slice is not copied). keras.ops.scan's TF
    backend needs a single scanned tensor when T is unknown at trace time.
    """
    return ops.arange(steps, dtype="int32")


def _padded_forward(gates_in, real, h0, c0, kernels, clips, saving):
    """Scans the cell over the `T` steps: `(outputs, h, c, saved)`.

    `saved` (when `saving`) is `[outputs, cs, i, j, f, o, c_raw, h_raw]`,
    each `[T, 2, B, D]`: the (held) states and what the cell's gradient
    needs. keras.ops.scan's TF backend stacks outputs shaped like the
    carry, so they ride there.
    """
    real_steps = real[:, None, :, None]

    def body(carry, t):
        h_prev, c_prev = carry[:2]
        h, c, gates, c_raw, h_raw = lstm_cell.step(
            gates_in[t], h_prev, c_prev, kernels, clips
        )
        h = ops.where(real_steps[t], h, h_prev)
        c = ops.where(real_steps[t], c, c_prev)
        new = (h, c) + (gates + (c_raw, h_raw) if saving else ())
        return new, new

    carry = (h0, c0)
    if saving:
        carry += (ops.zeros_like(c0),) * 5 + (ops.zeros_like(h0),)
    steps = ops.shape(gates_in)[0]
    (h, c, *_), stacked = ops.scan(body, carry, _step_indices(steps))
    outputs = ops.reshape(stacked[0], (steps,) + ops.shape(h0))
    if not saving:
        return outputs, h, c, None
    saved = [ops.reshape(x, (steps,) + ops.shape(x)[1:]) for x in stacked[1:]]
    return outputs, h, c, [outputs] + saved


def _padded_backward(real, initial, kernels, clips, saved, upstream):
    """Gradients of `(gates_in, real, h0, c0, U, W_proj)` from `saved`.

    Per step, in reverse, with `dh`, `dc` the gradients of the (held)
    state after the step: the cell's `step_backward` (its clip masks
    times `real`, so a held step passes nothing into its gates), plus
    `dh * held` and `dc * held` straight to the state before.
    """
    h0, c0 = initial
    d_outputs, d_h, d_c = upstream
    dtype = keras.backend.standardize_dtype(h0.dtype)
    hs, cs, *gates, c_raw, h_raw = saved
    steps = ops.shape(hs)[0]
    c_prev = ops.concatenate([c0[None], cs[:-1]], axis=0)
    r = ops.cast(real, c0.dtype)[:, None, :, None]  # [T, 1, B, 1]
    factors, m = lstm_cell.backward_factors(
        gates, c_prev, c_raw, h_raw, clips, real=r
    )
    held = 1.0 - r
    kernels_t = lstm_cell.transposed_kernels(kernels)

    def body(carry, t):
        dh, dc = carry[:2]
        dh = dh + d_outputs[t]
        dz, dh_raw, dh_prev, dc_prev = lstm_cell.step_backward(
            dh, dc, factors.at(t), kernels_t
        )
        new = (dh_prev + dh * held[t], dc_prev + dc * held[t], dz, dh_raw)
        return new, new

    zeros = (
        ops.zeros(ops.shape(factors.to_z)[1:], dtype),
        ops.zeros(ops.shape(h0), dtype),
    )
    (dh0, dc0, *_), (_, _, dz, dh_raw) = ops.scan(
        body, (d_h, d_c) + zeros, _step_indices(steps), reverse=True
    )
    dz = ops.reshape(dz, ops.shape(factors.to_z))
    dh_raw = ops.reshape(dh_raw, ops.shape(hs))
    h_prev = ops.concatenate([h0[None], hs[:-1]], axis=0)
    d_recurrent, d_projection = lstm_cell.kernel_gradients(
        h_prev, dz, m, dh_raw
    )
    return dz, None, ops.cast(dh0, dtype), dc0, d_recurrent, d_projection


_PADDED_LOOPS = lstm_cell.CompiledLoops(_padded_forward, _padded_backward)


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
    return _PACKED_LOOPS(
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


def _packed_forward(gates_in, batch_sizes, h0, c0, kernels, clips, saving):
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


def _packed_backward(batch_sizes, initial, kernels, clips, saved, upstream):
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


_PACKED_LOOPS = lstm_cell.CompiledLoops(_packed_forward, _packed_backward)
