"""Two layouts of a biLSTM layer's activations: padded and packed.

`ResidualBiLSTM` runs the same per-layer steps (dropout, recurrence,
residual) over either layout; a layout owns how its activations are laid
out and which time loop runs over them:

- `PaddedLayout`: direction-major `[2, B, T, P]`, the backward half kept
  reversed over each row's length between layers (restored only for the
  outputs), and `lstm_recurrence` over every step, padding included (its
  states pass through padded steps unchanged). Runs anywhere, XLA too.
- `PackedLayout`: real tokens only, `[N, 2, P]` with `N = sum(lengths)`,
  rows sorted by length and packed time-major (`packed_lstm_recurrence`), so
  neither the input products nor the loop touch padding; the first
  layer's input products are computed once per distinct token
  (`distinct_input_products`) at inference.

Both take a layer's weights `(W, U, W_proj, b)` stacked over directions
(`[2, ...]`, the forget bias already in `b`) and give the same outputs
within float rounding (1e-6).

`distinct_input_products`: the first biLSTM layer's input products, once per
distinct token. The input product of an LSTM step, `x_t W + b`, depends on the
step's input only. In the first layer of the biLM that input is the token's
character-CNN representation, the same vector wherever the token occurs: in a
batch of 64 lines of English prose (53,414 tokens in 2,048 lines of en_pd_lm's
test split) about a third of the positions hold a distinct token, and `<S>` /
`</S>` start and end every line. So for packed steps `X` (`[N, 2, D]`: both
directions' rows, each direction a permutation of the same `N` token vectors)
this computes

    R, i = unique rows of X (over both directions)      R: [U, D]
    G_d  = R W_d + b_d                                  [U, 4H], d = fwd, bwd
    gates[n, d] = G_d[i[n, d]]                          [N, 2, 4H]

`U / N` of the products of `X W + b`, and the same numbers: row `n` of a
matrix product is row `n` of the left factor times the right one, and
equal rows (compared bit for bit) give equal products. For the
`original` model (D = 512, 4H = 16,384) the first layer's input products
are 33.5 of the about 173 MFLOP per token of the whole biLM.

For inference: under dropout the rows differ (nothing to share), and
the training path keeps the plain product and its plain gradient.
TensorFlow only (`tf.raw_ops.UniqueV2`), as the packed loop is.
"""

import tensorflow as tf
from keras import ops

from keras_elmo.ops import recurrences

# Rows are compared as the integers of their bits (any float width).
_SAME_WIDTH_INTEGER = {2: tf.int16, 4: tf.int32, 8: tf.int64}


def distinct_input_products(inputs, kernel, bias):
    """Input products of packed steps, computed per distinct row.

    Args:
        inputs: float `[N, 2, D]`, packed steps of both directions.
        kernel: float `[2, D, 4H]`, the input kernels stacked over
            directions.
        bias: float `[2, 4H]`.

    Returns:
        float `[N, 2, 4H]`: `inputs[:, d] @ kernel[d] + bias[d]` per `d`.
    """
    flat = tf.reshape(inputs, [-1, tf.shape(inputs)[-1]])  # [2N, D]
    bits = tf.bitcast(flat, _SAME_WIDTH_INTEGER[flat.dtype.size])
    distinct, index = tf.raw_ops.UniqueV2(x=bits, axis=[0])
    first = tf.math.unsorted_segment_min(  # each distinct row's first n
        tf.range(tf.shape(index)[0]), index, tf.shape(distinct)[0]
    )
    rows = tf.gather(flat, first)  # [U, D]
    index = tf.reshape(index, [-1, 2])  # [N, 2], per direction
    return tf.stack(
        [
            tf.gather(tf.matmul(rows, kernel[d]) + bias[d], index[:, d])
            for d in (0, 1)
        ],
        axis=1,
    )


# Direction axis of the stacked weights and activations.
FORWARD, BACKWARD = 0, 1


def reverse_index(lengths, steps):
    """`[B, T]` int32 gather index reversing each row over its true length.

    Position `t < n_b` maps to `n_b - 1 - t`; padding maps to itself, so
    the index is its own inverse.
    """
    positions = ops.arange(steps, dtype="int32")[None, :]
    lengths = ops.cast(lengths, "int32")[:, None]
    return ops.where(
        ops.less(positions, lengths), lengths - 1 - positions, positions
    )


def reverse_sequences(inputs, index):
    """Gathers `inputs[b, index[b, t]]`: `[B, T, D]` -> `[B, T, D]`."""
    return ops.take_along_axis(inputs, index[:, :, None], axis=1)


class _Layout:
    """What both layouts share: one layer's run, given how each lays out
    its input products (`gates_in`), zero states and loop outputs."""

    def run(
        self, inputs, weights, state, clips, save_for_backward, tokens=False
    ):
        """One layer, both directions, in this layout: `(sequence, h, c)`.

        `weights` is `(W, U, W_proj, b)`, stacked over directions;
        `state` `(h0, c0)` from `initial_state`, or None for zeros;
        `clips` `(cell_clip, projection_clip)`; `tokens`: the inputs are
        token vectors (the first layer, no dropout), so equal rows are
        the same token and the packed layout shares their products.
        """
        kernel, recurrent, projection, bias = weights
        if tokens and self.shares_token_products:
            gates_in = distinct_input_products(inputs, kernel, bias)
        else:
            gates_in = self.gates_in(inputs, kernel, bias)
        if state is None:
            # `projection` is [2, H, P]: states are P (h) and H (c) wide.
            sizes = (projection.shape[2], projection.shape[1])
            state = [ops.zeros(self.rows + (n,), self.dtype) for n in sizes]
        sequence, h, c = self.recurrence(
            gates_in,
            self.steps,
            state[0],
            state[1],
            recurrent,
            projection,
            cell_clip=clips[0],
            projection_clip=clips[1],
            save_for_backward=save_for_backward,
        )
        return self.from_loop(sequence), h, c


class PaddedLayout(_Layout):
    """Every step of every row, direction-major `[2, B, T, D]`.

    Args:
        inputs: float `[B, T, P]`, right-padded.
        lengths: int `[B]`, real steps per row.
        dtype: the compute dtype of states and masks.
        recurrence: the time loop, `keras_elmo.ops.recurrences`'s
            function or one with its signature (a reference in tests).
    """

    shares_token_products = False  # every step of every row, XLA too

    def __init__(self, inputs, lengths, dtype, recurrence):
        self.recurrence = recurrence
        batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        # [B, T]; a right-padded version of the caller's mask.
        real = ops.less(
            ops.arange(steps, dtype="int32")[None, :], lengths[:, None]
        )
        self.steps = ops.transpose(real)  # what the loop reads, [T, B]
        self.rows = (2, batch)
        self.index = reverse_index(lengths, steps)
        self.dtype = dtype
        self.real_dir = ops.cast(real, dtype)[None, :, :, None]
        self.inputs = ops.stack([inputs, reverse_sequences(inputs, self.index)])

    def initial_state(self, h, c):
        """A layer's `(h0, c0)`, `[2, B, D]` each, in this layout."""
        return ops.cast(h, self.dtype), ops.cast(c, self.dtype)

    def gates_in(self, inputs, kernel, bias):
        """Input products of every step at once, `[T, 2, B, 4H]`."""
        gates_in = ops.einsum("dbtp,dpg->dbtg", inputs, kernel)
        gates_in = gates_in + bias[:, None, None, :]
        return ops.transpose(gates_in, (2, 0, 1, 3))

    def from_loop(self, sequence):
        """`[T, 2, B, P]` -> `[2, B, T, P]`."""
        return ops.transpose(sequence, (1, 2, 0, 3))

    def finish(self, sequence):
        """`(next layer's input, output [B, T, 2D])`: padding zeroed, the
        backward half restored to reading order in the output."""
        sequence = sequence * self.real_dir
        output = ops.concatenate(
            [
                sequence[FORWARD],
                reverse_sequences(sequence[BACKWARD], self.index),
            ],
            axis=-1,
        )
        return sequence, output

    def final_state(self, state):
        """A final `h` or `c` as the caller sees it, `[2, B, D]`."""
        return state


class PackedLayout(_Layout):
    """Real tokens only, packed time-major `[N, 2, D]` by row length.

    Args:
        inputs: float `[B, T, P]`, right-padded.
        lengths: int `[B]`, real steps per row.
        dtype: the compute dtype of the zero states.
    """

    recurrence = staticmethod(recurrences.packed_lstm_recurrence)
    shares_token_products = True

    def __init__(self, inputs, lengths, dtype):
        self.steps, self.indices, self.order = recurrences.packing(
            lengths
        )  # `steps`: the batch size of each step, what the loop reads
        self.rows = (ops.shape(self.order)[0], 2)
        self.shape = ops.shape(inputs)[:2]
        self.dtype = dtype
        self.inputs = recurrences.pack(inputs, self.indices)
        self.unsort = ops.argsort(self.order)

    def initial_state(self, h, c):
        """`[2, B, D]` -> sorted rows `[B, 2, D]`."""
        return tuple(
            ops.take(ops.transpose(s, (1, 0, 2)), self.order, axis=0)
            for s in (h, c)
        )

    def gates_in(self, inputs, kernel, bias):
        """Input products of the packed steps, `[N, 2, 4H]`."""
        return ops.stack(
            [
                ops.matmul(inputs[:, d], kernel[d]) + bias[d]
                for d in (FORWARD, BACKWARD)
            ],
            axis=1,
        )

    def from_loop(self, sequence):
        """The loop's `[N, 2, P]` is this layout already."""
        return sequence

    def finish(self, sequence):
        """`(next layer's input, output [B, T, 2D])`, zero at padding."""
        return sequence, recurrences.unpack(sequence, self.indices, self.shape)

    def final_state(self, state):
        """Sorted `[B, 2, D]` -> the caller's rows, `[2, B, D]`."""
        return ops.transpose(ops.take(state, self.unsort, 0), (1, 0, 2))
