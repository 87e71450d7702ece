"""`lstm_recurrence`: the LSTM time loop over every step, padding included.

The padded loop: each step runs `lstm_cell.step` on every row of the
batch, and a row's state is held unchanged through its padded steps, so
its final state is the one after its last real step. Every step has the
same shapes, so the loop is a `keras.ops.scan` that any compiler accepts:
it is the loop of XLA-compiled calls (`jit_compile=True`), where the
packed loop (`packed_recurrence`, real tokens only, per-step batch sizes)
cannot run, and of `ResidualBiLSTM.packed = False`, the reference for
comparisons. Its gradient is the cell's hand-written one
(`lstm_cell.step_backward`) run in reverse over the same steps, with the
held state's gradient passed straight through padding.

`neutral_lstm_recurrence` is the same forward scan without TensorFlow
(no `tf.function`, no hand-written gradient: the backend's autodiff of
the scan): the loop of the other Keras backends (JAX, PyTorch).
"""

import keras
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
    return _LOOPS(
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
    `c0`), differentiated by
    the backend's own autodiff, so `save_for_backward` is accepted and
    ignored. Arguments and returns as `lstm_recurrence`.
    """
    del save_for_backward  # autodiff saves what it needs
    gates_in = ops.convert_to_tensor(gates_in)
    dtype = keras.backend.standardize_dtype(gates_in.dtype)
    c0 = ops.convert_to_tensor(c0)
    c0_dtype = keras.backend.standardize_dtype(c0.dtype)
    kernels = (
        ops.cast(recurrent_kernel, dtype),
        ops.cast(projection_kernel, dtype),
    )
    outputs, h, c, _ = _forward(
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


def _forward(gates_in, real, h0, c0, kernels, clips, saving):
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


def _backward(real, initial, kernels, clips, saved, upstream):
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


_LOOPS = lstm_cell.CompiledLoops(_forward, _backward)
