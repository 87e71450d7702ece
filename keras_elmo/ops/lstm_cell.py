"""`lstm_cell`: one step of the projected, clipped LSTM and its gradient.

Written once, driven by both time loops: `lstm_recurrence` (every step of
every row, padded) and `packed_lstm_recurrence` (the running rows only). Both
directions advance together; a step's tensors stack them on a direction
axis, `axis` 0 (`[2, n, D]`, the padded loop) or 1 (`[n, 2, D]`, the
packed one). For each direction `d`, with `U = recurrent_kernel[d]`
(`[P, 4H]`) and `W = projection_kernel[d]` (`[H, P]`):

    z = z_in + h_prev U                     # [n, 4H]: blocks i, j, f, o
    i, j, f, o = sig(z_i), tanh(z_j), sig(z_f), sig(z_o)      # `gates`
    c_raw = i j + f c_prev;       c = clip(c_raw, cell_clip)  # [n, H]
    m = o tanh(c);                h_raw = m W                 # [n, P]
    h = clip(h_raw, projection_clip)

`clip(x, k)` is `min(max(x, -k), k)` (none when `k` is None). The
gradient, from `dh`, `dc` (of the `h`, `c` after the step), with
`[x inside k] = 1.0 where -k <= x <= k` (where `ops.clip` passes
gradient, the bounds included):

    dh_raw = dh [h_raw inside projection_clip]
    dm = dh_raw W^T
    dc_raw = dc [c_raw inside cell_clip]
             + dm o (1 - tanh(c)^2) [c_raw inside cell_clip]
    dz = [dc_raw, dc_raw, dc_raw, dm]
         * [j i (1 - i), i (1 - j^2), c_prev f (1 - f), tanh(c) o (1 - o)]
    dh_prev = dz U^T;             dc_prev = dc_raw f

and the kernels' gradients sum over steps and rows: `dU = sum h_prev^T
dz`, `dW = sum m^T dh_raw`. Everything after `dh` and `dc` that does not
depend on them (the clip masks, `to_z`, ...) is prepared for all steps at
once (`backward_factors`), so a backward step does only the two matmuls
and a few products. The values equal TensorFlow's automatic gradient of
the forward step up to rounding.

Dtypes: the matmuls run in the dtype of `z_in` (e.g. `bfloat16` under a
mixed-precision policy); gates, cell states and the gradients carried
between steps are in `state_dtype` of it: float32, or float64 when the
matmuls are float64 (a float64 model is float64 throughout).
"""

import collections

import keras
import tensorflow as tf
from keras import ops


def state_dtype(matmul_dtype):
    """The dtype of the gates, cell states and carried gradients for
    matmuls in `matmul_dtype`: "float64" for float64, else "float32"
    (float16 and bfloat16 accumulate their state in float32)."""
    if keras.backend.standardize_dtype(matmul_dtype) == "float64":
        return "float64"
    return "float32"


def clip(x, limit):
    """`clip(x, -limit, limit)`, or `x` when `limit` is None."""
    return x if limit is None else ops.clip(x, -limit, limit)


def clip_passes(x, limit):
    """1.0 where `clip(x, -limit, limit)` passes gradient to `x`, else 0.0."""
    if limit is None:
        return ops.ones_like(x)
    inside = ops.logical_and(
        ops.greater_equal(x, -limit), ops.less_equal(x, limit)
    )
    return ops.cast(inside, x.dtype)


def per_direction_matmul(x, kernel, axis=0):
    """`[2, n, M]` (axis 0) or `[n, 2, M]` (axis 1) times `[2, M, N]`:
    one plain 2-D matmul per direction, stacked back on `axis`.

    The same product as a batched matmul, but TensorFlow's CPU kernels run
    two plain matmuls faster: one recurrent product of the shipped model at
    B = 1 (128 x 4096) took 107 us instead of 164 us, and of `original` at
    B = 64 (512 x 16384) 12.4 ms instead of 13.2 ms, in one run of
    benchmarks/lstm_step_matmul.py.
    """
    halves = (x[0], x[1]) if axis == 0 else (x[:, 0], x[:, 1])
    return ops.stack(
        [ops.matmul(halves[0], kernel[0]), ops.matmul(halves[1], kernel[1])],
        axis=axis,
    )


def step(z_in, h_prev, c_prev, kernels, clips, axis=0):
    """One forward step of both directions: `(h, c, gates, c_raw, h_raw)`.

    Args:
        z_in: `[2, n, 4H]` or `[n, 2, 4H]` (see `axis`): the input
            products `x W_in + b` of this step.
        h_prev: `[.., P]` in the dtype of `z_in`; `c_prev` `[.., H]`
            in `state_dtype(z_in.dtype)`: the state before the step.
        kernels: `(U [2, P, 4H], W_proj [2, H, P])`.
        clips: `(cell_clip, projection_clip)`, floats or None.
        axis: the direction axis of `z_in` and the states.

    Returns:
        `h` (clipped, dtype of `z_in`) and `c` (clipped), the activated
        `gates` `(i, j, f, o)` and `c_raw` (the cell before its clip), all
        three in the state dtype, and `h_raw` (before the projection
        clip, dtype of `z_in`): what `backward_factors` needs.
    """
    recurrent_kernel, projection_kernel = kernels
    cell_clip, projection_clip = clips
    dtype = keras.backend.standardize_dtype(z_in.dtype)
    z = z_in + per_direction_matmul(h_prev, recurrent_kernel, axis)
    i, j, f, o = ops.split(ops.cast(z, state_dtype(dtype)), 4, axis=-1)
    gates = (ops.sigmoid(i), ops.tanh(j), ops.sigmoid(f), ops.sigmoid(o))
    c_raw = gates[0] * gates[1] + gates[2] * c_prev
    c = clip(c_raw, cell_clip)
    h_raw = per_direction_matmul(
        ops.cast(gates[3] * ops.tanh(c), dtype), projection_kernel, axis
    )
    return clip(h_raw, projection_clip), c, gates, c_raw, h_raw


class StepFactors(
    collections.namedtuple(
        "StepFactors", ["to_h_raw", "to_c_raw", "m_to_c_raw", "to_z", "forget"]
    )
):
    """The backward step's factors, for all steps or (`at`) one step.

    `to_h_raw = [h_raw inside]` and `to_c_raw = [c_raw inside]` (each
    times the caller's `real`, if given), `m_to_c_raw = o (1 - tanh(c)^2)
    [c_raw inside]`, `to_z` the `[.., 4H]` factor of `dz` and `forget`
    the forget gate `f`; see the module docstring.
    """

    def at(self, index):
        """The factors of one step: each field indexed by `index`."""
        return StepFactors(*(x[index] for x in self))


def backward_factors(gates, c_prev, c_raw, h_raw, clips, real=None):
    """What the backward steps need, prepared for all steps at once.

    Args:
        gates: `(i, j, f, o)` after their activations, stacked over steps
            (any leading shape, `[.., H]`), in the state dtype.
        c_prev: the cell state before each step, like the gates.
        c_raw, h_raw: the values before the clips, from `step`.
        clips: `(cell_clip, projection_clip)`.
        real: None, or a 0/1 multiplier (state dtype) broadcasting to the
            states: 0 where a step holds its state (the padded loop),
            so that it passes no gradient into its gates.

    Returns:
        `(factors, m)`: the `StepFactors` and `m = o tanh(c)` (`[.., H]`,
        in the dtype of `h_raw`) for the projection kernel's gradient.
    """
    in_gate, candidate, forget_gate, out_gate = gates
    cell_clip, projection_clip = clips
    tanh_c = ops.tanh(clip(c_raw, cell_clip))
    cell_passes = clip_passes(c_raw, cell_clip)
    to_h_raw = clip_passes(ops.cast(h_raw, c_raw.dtype), projection_clip)
    to_c_raw = cell_passes
    if real is not None:
        to_h_raw, to_c_raw = to_h_raw * real, cell_passes * real
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
    factors = StepFactors(to_h_raw, to_c_raw, m_to_c_raw, to_z, forget_gate)
    dtype = keras.backend.standardize_dtype(h_raw.dtype)
    return factors, ops.cast(out_gate * tanh_c, dtype)


def transposed_kernels(kernels):
    """`(U^T [2, 4H, P], W_proj^T [2, P, H])`, once for all backward steps."""
    return tuple(ops.transpose(k, (0, 2, 1)) for k in kernels)


def step_backward(dh, dc, factors, kernels_t, axis=0):
    """One backward step: `(dz, dh_raw, dh_prev, dc_prev)`.

    Args:
        dh: `[.., P]`, the gradient of the step's `h` (the output's and
            the next step's); `dc` `[.., H]`, of its `c`; both in the
            state dtype.
        factors: this step's `StepFactors` (`factors.at(t)`).
        kernels_t: `transposed_kernels(kernels)`, in the matmul dtype.
        axis: the direction axis, as in `step`.

    Returns:
        `dz` (the gradient of the step's `z_in`) and `dh_raw` in the
        kernels' dtype; `dh_prev`, `dc_prev` (state dtype), the gradients the
        state before the step receives through this cell (a loop that
        holds states adds its own path).
    """
    recurrent_t, projection_t = kernels_t
    dtype = keras.backend.standardize_dtype(recurrent_t.dtype)
    dh_raw = ops.cast(dh * factors.to_h_raw, dtype)
    state = state_dtype(dtype)
    dm = ops.cast(per_direction_matmul(dh_raw, projection_t, axis), state)
    dc_raw = dc * factors.to_c_raw + dm * factors.m_to_c_raw
    dz = ops.concatenate([dc_raw, dc_raw, dc_raw, dm], axis=-1) * factors.to_z
    dz = ops.cast(dz, dtype)
    dh_prev = ops.cast(per_direction_matmul(dz, recurrent_t, axis), state)
    return dz, dh_raw, dh_prev, dc_raw * factors.forget


def kernel_gradients(h_prev, dz, m, dh_raw):
    """`(dU, dW_proj)`: `sum h_prev^T dz` and `sum m^T dh_raw` over every
    step and row, per direction.

    Each argument stacks the steps with the direction on axis 1
    (`[T, 2, B, D]` padded, `[N, 2, D]` packed); each sum is one batched
    matmul over direction-major copies (an einsum over the time-major
    layout is about twice slower).
    """
    return _contract(h_prev, dz), _contract(m, dh_raw)


def _contract(a, b):
    """`[S, 2, .., M]`, `[S, 2, .., K]` -> `[2, M, K]`: `a` as `[2, M, R]`
    and `b` as `[2, R, K]` (`R` every step and row), one transpose each."""
    last = len(a.shape) - 1
    a = ops.transpose(a, (1, last, 0) + tuple(range(2, last)))
    b = ops.transpose(b, (1, 0) + tuple(range(2, last + 1)))
    return ops.matmul(
        ops.reshape(a, (2, ops.shape(a)[1], -1)),
        ops.reshape(b, (2, -1, ops.shape(b)[-1])),
    )


def _or_zeros(upstream, like, dtype):
    """An output's incoming gradient in `dtype`; zeros if it has none."""
    if upstream is None:
        return ops.zeros(ops.shape(like), dtype)
    return ops.cast(upstream, dtype)


class CompiledLoops:
    """What both time loops share around the cell: the entry.

    `forward(gates_in, steps, h0, c0, kernels, clips, saving)` returns
    `(outputs, h, c, saved)` (`saved` what `backward` needs when
    `saving`), and `backward(steps, (h0, c0), kernels, clips, saved,
    (d_outputs, d_h, d_c))` the gradients of `(gates_in, steps, h0, c0,
    recurrent_kernel, projection_kernel)`; `steps` is the loop's own
    schedule (the padded loop's `real` mask, the packed one's batch
    sizes). A call casts (matmuls in the dtype of `gates_in`, the cell
    state in `state_dtype` of it, the final `c` back in the dtype of
    `c0`) and runs
    `forward` under the hand-written gradient, or alone when
    `save_for_backward` is False (inference: nothing saved; TensorFlow's
    own gradient, if one is asked for anyway, is correct but slower).

    Called eagerly, the loop is wrapped in `tf.function` once per
    `(cell_clip, projection_clip, save_for_backward)`: an eager loop
    dispatches every op of every step from Python (about 25 ms a step, so
    an eager `bilm(ids)` on a 1,000-token batch took minutes instead of
    seconds). Inside a traced function (Keras `predict`/`fit`, the
    SavedModel, the trainer) the loop is traced in place.
    """

    def __init__(self, forward, backward):
        self.forward = forward
        self.backward = backward
        self.functions = {}

    def __call__(self, gates_in, steps, h0, c0, kernels, clips, save):
        gates_in = ops.convert_to_tensor(gates_in)
        dtype = keras.backend.standardize_dtype(gates_in.dtype)
        c0 = ops.convert_to_tensor(c0)
        c0_dtype = keras.backend.standardize_dtype(c0.dtype)
        outputs, h, c = self.loop(tuple(clips), bool(save))(
            gates_in,
            steps,
            ops.cast(h0, dtype),
            ops.cast(c0, state_dtype(dtype)),
            ops.cast(kernels[0], dtype),
            ops.cast(kernels[1], dtype),
        )
        return outputs, h, ops.cast(c, c0_dtype)

    def loop(self, clips, save):
        run = (self.with_gradient if save else self.forward_only)(clips)
        if not tf.executing_eagerly():
            return run
        key = clips + (save,)
        if key not in self.functions:
            self.functions[key] = tf.function(run, reduce_retracing=True)
        return self.functions[key]

    def forward_only(self, clips):
        def run(gates_in, steps, h0, c0, recurrent_kernel, projection_kernel):
            kernels = (recurrent_kernel, projection_kernel)
            outputs, h, c, _ = self.forward(
                gates_in, steps, h0, c0, kernels, clips, saving=False
            )
            return outputs, h, c

        return run

    def with_gradient(self, clips):
        @ops.custom_gradient
        def run(gates_in, steps, h0, c0, recurrent_kernel, projection_kernel):
            kernels = (recurrent_kernel, projection_kernel)
            outputs, h, c, saved = self.forward(
                gates_in, steps, h0, c0, kernels, clips, saving=True
            )

            def grad(*upstream):
                if len(upstream) == 1:  # JAX: the outputs' in one tuple
                    upstream = tuple(upstream[0])
                upstream = tuple(
                    _or_zeros(g, like, c0.dtype)
                    for g, like in zip(upstream, (outputs, h0, c0))
                )
                return self.backward(
                    steps, (h0, c0), kernels, clips, saved, upstream
                )

            return (outputs, h, c), grad

        return run
