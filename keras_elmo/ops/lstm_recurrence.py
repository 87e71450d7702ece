"""`lstm_recurrence`: the projected LSTM's time loop, with its own gradient."""

import keras
import tensorflow as tf
from keras import ops


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
    step `t`, for each direction `d` and row `b`:

        z = gates_in[t] + h U                    # blocks i, j, f, o
        c' = clip(sigmoid(i) * tanh(j) + sigmoid(f) * c, cell_clip)
        h' = clip((sigmoid(o) * tanh(c')) W_proj, projection_clip)
        h, c = (h', c') if real[t] else (h, c)  # held through padding

    The gradient is written by hand (`keras.ops.custom_gradient`): the
    forward loop saves the gate activations and unclipped values, the
    backward loop runs in reverse doing only the two recurrent matmuls per
    step (`dh W_proj^T` and `dz U^T`) and a few elementwise products
    prepared for all steps at once, and the kernel gradients are one
    batched matmul each over all steps afterwards, so backward costs about
    twice the forward, as the FLOPs do (TensorFlow's automatic gradient of
    the loop costs several times more). The values equal that automatic
    gradient up to rounding; clip gradients pass where
    `-clip <= x <= clip`, as `ops.clip`'s do.

    Under a mixed-precision compute dtype (e.g. `bfloat16`) the gates and
    the cell state are computed in float32; the matmuls run in the dtype
    of `gates_in`.

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


class CompiledLoops:
    """A recurrence's entry: casts, picks the loop, runs it.

    Shared by `lstm_recurrence` and `packed_lstm_recurrence`. The loop is
    `with_gradient(cell_clip, projection_clip)` (hand-written gradient) or
    `forward_only(...)`, each called as `loop(gates_in, steps, h0, c0,
    recurrent_kernel, projection_kernel)`. Called eagerly, the loop is
    wrapped in `tf.function` once per `(cell_clip, projection_clip,
    save_for_backward)`: an eager loop dispatches every op of every step
    from Python (about 25 ms a step, so an eager `bilm(ids)` on a
    1,000-token batch took minutes instead of seconds). Inside a traced
    function (Keras `predict`/`fit`, the SavedModel, the trainer) the loop
    is traced in place.

    The matmuls run in the dtype of `gates_in`, the cell state in float32;
    the final `c` comes back in the dtype of `c0`.
    """

    def __init__(self, with_gradient, forward_only):
        self.with_gradient = with_gradient
        self.forward_only = forward_only
        self.functions = {}

    def __call__(self, gates_in, steps, h0, c0, kernels, clips, save):
        gates_in = ops.convert_to_tensor(gates_in)
        dtype = keras.backend.standardize_dtype(gates_in.dtype)
        c0 = ops.convert_to_tensor(c0)
        state_dtype = keras.backend.standardize_dtype(c0.dtype)
        outputs, h, c = self.loop(clips, bool(save))(
            gates_in,
            steps,
            ops.cast(h0, dtype),
            ops.cast(c0, "float32"),
            ops.cast(kernels[0], dtype),
            ops.cast(kernels[1], dtype),
        )
        return outputs, h, ops.cast(c, state_dtype)

    def loop(self, clips, save):
        run = (self.with_gradient if save else self.forward_only)(*clips)
        if not tf.executing_eagerly():
            return run
        key = tuple(clips) + (save,)
        if key not in self.functions:
            self.functions[key] = tf.function(run, reduce_retracing=True)
        return self.functions[key]


def _clip(x, limit):
    return x if limit is None else ops.clip(x, -limit, limit)


def _passes(x, limit):
    """1.0 where `clip(x, -limit, limit)` passes gradient to `x`, else 0.0."""
    if limit is None:
        return ops.ones_like(x)
    inside = ops.logical_and(
        ops.greater_equal(x, -limit), ops.less_equal(x, limit)
    )
    return ops.cast(inside, x.dtype)


def _or_zeros(upstream, like, dtype="float32"):
    if upstream is None:
        return ops.zeros(ops.shape(like), dtype)
    return ops.cast(upstream, dtype)


def _step_indices(steps):
    """What the loops scan: the step index, to slice captured `[T, ...]`
    tensors with (a leading slice is not copied). keras.ops.scan's TF
    backend needs a single scanned tensor when T is unknown at trace time.
    """
    return ops.arange(steps, dtype="int32")


def _per_direction_matmul(x, kernel):
    """`[2, B, M] x [2, M, N] -> [2, B, N]`, one 2-D matmul per direction.

    The same product as a batched matmul, but TensorFlow's CPU kernels run
    two plain matmuls faster: one recurrent product of the shipped model at
    B = 1 (128 x 4096) took 107 us instead of 164 us, and of `original` at
    B = 64 (512 x 16384) 12.4 ms instead of 13.2 ms, in one run of
    benchmarks/lstm_step_matmul.py.
    """
    return ops.stack([ops.matmul(x[0], kernel[0]), ops.matmul(x[1], kernel[1])])


def _cell_step(z_in, real_t, h_prev, c_prev, kernels, clips):
    """One step of both directions: `(h, c, gates, c_raw, h_raw)`.

    `kernels` is `(U, W_proj)`, `clips` `(cell_clip, projection_clip)`.
    `gates` is `(sigmoid(i), tanh(j), sigmoid(f), sigmoid(o))` in float32;
    `c_raw` and `h_raw` are the values before clipping; `h`, `c` hold
    their previous values where `real_t` is False.
    """
    recurrent_kernel, projection_kernel = kernels
    cell_clip, projection_clip = clips
    dtype = keras.backend.standardize_dtype(z_in.dtype)
    z = z_in + _per_direction_matmul(h_prev, recurrent_kernel)
    i, j, f, o = ops.split(ops.cast(z, "float32"), 4, axis=-1)
    gates = (ops.sigmoid(i), ops.tanh(j), ops.sigmoid(f), ops.sigmoid(o))
    c_raw = gates[0] * gates[1] + gates[2] * c_prev
    c = _clip(c_raw, cell_clip)
    h_raw = _per_direction_matmul(
        ops.cast(gates[3] * ops.tanh(c), dtype), projection_kernel
    )
    h = ops.where(real_t, _clip(h_raw, projection_clip), h_prev)
    c = ops.where(real_t, c, c_prev)
    return h, c, gates, c_raw, h_raw


def _scan_steps(gates_in, real, h0, c0, kernels, clips, saving):
    """Scans `_cell_step` over the `T` steps: `(h, c, stacked)`.

    `stacked` holds each step's carry, `(h, c)`, and when `saving` also
    what backward needs (the gates, `c_raw`, `h_raw`): keras.ops.scan's
    TF backend stacks outputs shaped like the carry, so it rides there.
    """
    real_steps = real[:, None, :, None]

    def step(carry, t):
        h, c, gates, c_raw, h_raw = _cell_step(
            gates_in[t], real_steps[t], *carry[:2], kernels, clips
        )
        new = (h, c) + (gates + (c_raw, h_raw) if saving else ())
        return new, new

    carry = (h0, c0)
    if saving:
        carry += (ops.zeros_like(c0),) * 5 + (ops.zeros_like(h0),)
    steps = ops.shape(gates_in)[0]
    (h, c, *_), stacked = ops.scan(step, carry, _step_indices(steps))
    return h, c, stacked


def _forward_only(cell_clip, projection_clip):
    """The loop without saving anything for backward: inference. Its
    gradient, if one is asked for anyway, is TensorFlow's own (correct,
    slower)."""

    def run(gates_in, real, h0, c0, recurrent_kernel, projection_kernel):
        h, c, stacked = _scan_steps(
            gates_in,
            real,
            h0,
            c0,
            (recurrent_kernel, projection_kernel),
            (cell_clip, projection_clip),
            saving=False,
        )
        steps = ops.shape(gates_in)[0]
        return ops.reshape(stacked[0], (steps,) + ops.shape(h0)), h, c

    return run


def _recurrence(cell_clip, projection_clip):
    """The custom-gradient function for one pair of clip values."""

    @ops.custom_gradient
    def run(gates_in, real, h0, c0, recurrent_kernel, projection_kernel):
        steps = ops.shape(gates_in)[0]
        k = (recurrent_kernel, projection_kernel)
        clips = (cell_clip, projection_clip)
        h, c, stacked = _scan_steps(
            gates_in, real, h0, c0, k, clips, saving=True
        )
        hs = ops.reshape(stacked[0], (steps,) + ops.shape(h0))

        def grad(*upstream):
            d_outputs, d_h, d_c = (
                _or_zeros(upstream[0], hs),
                _or_zeros(upstream[1], h0),
                _or_zeros(upstream[2], c0),
            )
            saved = [
                ops.reshape(x, (steps,) + ops.shape(x)[1:]) for x in stacked
            ]
            return _backward(
                real, (h0, c0), k, clips, saved, (d_outputs, d_h, d_c)
            )

        return (hs, h, c), grad

    return run


def gate_gradient_factors(gates, c_prev, tanh_c, cell_passes):
    """The step-local factors of the LSTM cell's backward pass.

    With `gates = (i, j, f, o)` after their activations (`sigmoid`,
    `tanh`, `sigmoid`, `sigmoid`), `c_raw = i j + f c_prev`,
    `m = o tanh(clip(c_raw))`:

        m_to_c_raw = dm/dc_raw = o (1 - tanh(c)^2) [c_raw inside the clip]
        to_z = d[c_raw, c_raw, c_raw, m] / dz
             = [j i (1 - i), i (1 - j^2), c_prev f (1 - f), tanh(c) o (1 - o)]

    so `dz = [dc_raw, dc_raw, dc_raw, dm] * to_z` (gate order of the
    kernels). Shared by the padded and the packed recurrence.
    """
    in_gate, candidate, forget_gate, out_gate = gates
    m_to_c_raw = out_gate * (1.0 - tanh_c * tanh_c) * cell_passes
    to_z = ops.concatenate(
        [
            candidate * in_gate * (1.0 - in_gate),
            in_gate * (1.0 - candidate * candidate),
            c_prev * forget_gate * (1.0 - forget_gate),
            tanh_c * out_gate * (1.0 - out_gate),
        ],
        axis=-1,
    )
    return m_to_c_raw, to_z


def _backward(real, initial, kernels, clips, saved, upstream):
    """Gradients of `run`'s inputs from the saved forward values.

    `initial` is `(h0, c0)`, `kernels` `(recurrent, projection)`, `clips`
    `(cell, projection)` as in `_cell_step`; `upstream` holds the
    gradients of the outputs `(hs, h, c)`.
    """
    h0, c0 = initial
    recurrent_kernel, projection_kernel = kernels
    cell_clip, projection_clip = clips
    d_outputs, d_h, d_c = upstream
    dtype = keras.backend.standardize_dtype(h0.dtype)
    hs, cs, in_gate, candidate, forget_gate, out_gate, c_raw, h_raw = saved
    steps = ops.shape(hs)[0]
    c_prev = ops.concatenate([c0[None], cs[:-1]], axis=0)
    tanh_c = ops.tanh(_clip(c_raw, cell_clip))
    cell_passes = _passes(c_raw, cell_clip)
    r = ops.cast(real, "float32")[:, None, :, None]  # [T, 1, B, 1]
    # Everything elementwise that does not depend on the incoming
    # gradients, for all steps at once. Per step, with `dh` and `dc` the
    # gradients of the (held) state after the step:
    #   dh_raw = dh * to_h_raw                    (projection clip, real)
    #   dm     = dh_raw W_proj^T                  (m = sigmoid(o) tanh(c))
    #   dc_raw = dc * to_c_raw + dm * m_to_c_raw  (cell clip, real)
    #   dz     = [dc_raw, dc_raw, dc_raw, dm] * to_z
    #   dh_prev = dz U^T + dh * held
    #   dc_prev = dc_raw * sigmoid(f) + dc * held
    to_h_raw = _passes(ops.cast(h_raw, "float32"), projection_clip) * r
    to_c_raw = cell_passes * r
    m_to_c_raw, to_z = gate_gradient_factors(
        (in_gate, candidate, forget_gate, out_gate), c_prev, tanh_c, cell_passes
    )
    held = 1.0 - r
    # Transposed once, outside the loop, for the per-direction matmuls.
    projection_t = ops.transpose(projection_kernel, (0, 2, 1))  # [2, P, H]
    recurrent_t = ops.transpose(recurrent_kernel, (0, 2, 1))  # [2, 4H, P]

    def step(carry, t):
        dh, dc, _ = carry
        dh = dh + d_outputs[t]
        dm = _per_direction_matmul(
            ops.cast(dh * to_h_raw[t], dtype), projection_t
        )
        dm = ops.cast(dm, "float32")
        dc_raw = dc * to_c_raw[t] + dm * m_to_c_raw[t]
        dz = ops.concatenate([dc_raw, dc_raw, dc_raw, dm], axis=-1) * to_z[t]
        dh_prev = _per_direction_matmul(ops.cast(dz, dtype), recurrent_t)
        dh_prev = ops.cast(dh_prev, "float32") + dh * held[t]
        dc_prev = dc_raw * forget_gate[t] + dc * held[t]
        return (dh_prev, dc_prev, dz), (dh_prev, dc_prev, dz)

    dz0 = ops.zeros(ops.shape(to_z)[1:], "float32")
    (dh0, dc0, _), (dh_prevs, _, dz) = ops.scan(
        step, (d_h, d_c, dz0), _step_indices(steps), reverse=True
    )
    dz = ops.cast(ops.reshape(dz, ops.shape(to_z)), dtype)
    # The gradient each step's state received, then the kernel gradients as
    # one contraction over all steps and rows each.
    dh_after = d_outputs + ops.concatenate(
        [ops.reshape(dh_prevs, ops.shape(d_outputs))[1:], d_h[None]], axis=0
    )
    h_prev = ops.concatenate([h0[None], hs[:-1]], axis=0)
    d_recurrent = _contract_steps(h_prev, dz)
    d_projection = _contract_steps(
        ops.cast(out_gate * tanh_c, dtype),
        ops.cast(dh_after * to_h_raw, dtype),
    )
    # Gradients of (gates_in, real, h0, c0, recurrent, projection kernel).
    return dz, None, ops.cast(dh0, dtype), dc0, d_recurrent, d_projection


def _contract_steps(a, b):
    """`sum_{t,b} a[t, d, b]^T b[t, d, b]`: `[T, 2, B, M]`, `[T, 2, B, N]`
    -> `[2, M, N]`, as one batched matmul over direction-major copies (an
    einsum over the time-major layout is about twice slower)."""
    a = ops.reshape(ops.transpose(a, (1, 0, 2, 3)), (2, -1, ops.shape(a)[-1]))
    b = ops.reshape(ops.transpose(b, (1, 0, 2, 3)), (2, -1, ops.shape(b)[-1]))
    return ops.matmul(ops.transpose(a, (0, 2, 1)), b)


_LOOPS = CompiledLoops(_recurrence, _forward_only)
