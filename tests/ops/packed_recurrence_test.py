import numpy as np
import tensorflow as tf
from keras import ops

from keras_elmo.ops import recurrences as packed_recurrence
from keras_elmo.ops.recurrences import lstm_recurrence
from keras_elmo.testing import TestCase
from tests.cpu_rounding import on_cpu
from tests.ops.lstm_recurrence_test import CELL_CLIP
from tests.ops.lstm_recurrence_test import PROJ_CLIP
from tests.ops.lstm_recurrence_test import H
from tests.ops.lstm_recurrence_test import P
from tests.ops.lstm_recurrence_test import reference_recurrence

CLIPS = {"cell_clip": CELL_CLIP, "projection_clip": PROJ_CLIP}
# Mixed lengths with an empty row, a one-step row and ties; all equal.
MIXED = [5, 0, 1, 3, 5, 2]
EQUAL = [4, 4, 4]


def padded_arguments(lengths, seed, scale=3.0):
    """`(gates_in [T, 2, B, 4H], real [T, B], h0, c0, U, W_proj)` for the
    padded loop, `T = max(lengths) + 1` (one all-padding step)."""
    rng = np.random.default_rng(seed)
    batch, steps = len(lengths), max(lengths) + 1

    def normal(*shape, std=1.0):
        return (std * rng.normal(size=shape)).astype("float32")

    real = np.arange(steps)[:, None] < np.asarray(lengths)[None, :]
    gates = normal(steps, 2, batch, 4 * H, std=2.0)
    return (
        gates,
        real,
        normal(2, batch, P, std=0.5),
        normal(2, batch, H, std=0.5),
        normal(2, P, 4 * H, std=0.5 * scale),
        normal(2, H, P, std=0.5 * scale),
    )


def to_packed(padded, lengths):
    """The same problem in packed form: `(gates [N, 2, 4H], batch_sizes,
    h0 [B, 2, P], c0 [B, 2, H], order, steps, rows)` with rows sorted by
    length, built with NumPy (not with `packing`)."""
    gates, _, h0, c0, _, _ = padded
    order = sorted(range(len(lengths)), key=lambda b: -lengths[b])
    steps, rows = [], []
    for t in range(max(lengths)):
        for k, b in enumerate(order):
            if lengths[b] > t:
                steps.append(t)
                rows.append(b)
    batch_sizes = np.bincount(steps, minlength=max(lengths)).astype("int32")
    packed_gates = np.stack([gates[t, :, b] for t, b in zip(steps, rows)])
    return (
        packed_gates.reshape(-1, 2, 4 * H),
        batch_sizes,
        np.transpose(h0[:, order], (1, 0, 2)),
        np.transpose(c0[:, order], (1, 0, 2)),
        order,
        steps,
        rows,
    )


def weights_like(lengths, seed):
    """Random loss weights for the padded results (zero at held steps, as
    the biLSTM masks them) and the same weights in packed form."""
    rng = np.random.default_rng(seed)
    batch, steps = len(lengths), max(lengths) + 1
    real = np.arange(steps)[:, None] < np.asarray(lengths)[None, :]
    w_out = rng.normal(size=(steps, 2, batch, P)).astype("float32")
    w_out *= real[:, None, :, None]
    w_h = rng.normal(size=(2, batch, P)).astype("float32")
    w_c = rng.normal(size=(2, batch, H)).astype("float32")
    return w_out, w_h, w_c


def run_padded(padded, weights, save_for_backward=True):
    gates, real, h0, c0, u, wp = (tf.constant(x) for x in padded)
    with tf.GradientTape() as tape:
        tape.watch([gates, h0, c0, u, wp])
        out, h, c = lstm_recurrence(
            gates,
            real,
            h0,
            c0,
            u,
            wp,
            save_for_backward=save_for_backward,
            **CLIPS,
        )
        loss = sum(ops.sum(x * w) for x, w in zip((out, h, c), weights))
    grads = tape.gradient(loss, [gates, h0, c0, u, wp])
    return (out, h, c), grads


def run_packed(padded, lengths, weights, save_for_backward=True):
    """The packed loop on the same problem, with its results and
    gradients brought back to the padded layout."""
    packed = to_packed(padded, lengths)
    gates, sizes, h0, c0 = (tf.constant(x) for x in packed[:4])
    order, steps, rows = packed[4:]
    u, wp = (tf.constant(x) for x in padded[4:])
    w_out, w_h, w_c = weights
    w_out = np.stack([w_out[t, :, b] for t, b in zip(steps, rows)])
    w_h = np.transpose(w_h[:, order], (1, 0, 2))
    w_c = np.transpose(w_c[:, order], (1, 0, 2))
    with tf.GradientTape() as tape:
        tape.watch([gates, h0, c0, u, wp])
        out, h, c = packed_recurrence.packed_lstm_recurrence(
            gates,
            sizes,
            h0,
            c0,
            u,
            wp,
            save_for_backward=save_for_backward,
            **CLIPS,
        )
        loss = (
            ops.sum(out * w_out.reshape(out.shape))
            + ops.sum(h * w_h)
            + ops.sum(c * w_c)
        )
    d_gates, d_h0, d_c0, d_u, d_wp = tape.gradient(loss, [gates, h0, c0, u, wp])
    unsort = np.argsort(order)
    d_gates_padded = np.zeros_like(padded[0])
    outputs = np.zeros((padded[0].shape[0], 2, len(lengths), P), "float32")
    for i, (t, b) in enumerate(zip(steps, rows)):
        d_gates_padded[t, :, b] = np.asarray(d_gates)[i]
        outputs[t, :, b] = np.asarray(out)[i]

    def restore(x):
        return np.transpose(np.asarray(x), (1, 0, 2))[:, unsort]

    results = (outputs, restore(h), restore(c))
    grads = (d_gates_padded, restore(d_h0), restore(d_c0), d_u, d_wp)
    return results, grads


class PackingTest(TestCase):
    def test_layout(self):
        lengths = [3, 0, 1, 3, 2]
        sizes, indices, order = packed_recurrence.packing(lengths)
        self.assertAllEqual(order, [0, 3, 4, 2, 1])
        self.assertAllEqual(sizes, [4, 3, 2])
        rows = [0, 3, 4, 2, 0, 3, 4, 0, 3]
        self.assertAllEqual(indices[0][:, 0], rows)
        self.assertAllEqual(indices[1][:, 0], rows)
        self.assertAllEqual(indices[0][:, 1], [0, 0, 0, 0, 1, 1, 1, 2, 2])
        self.assertAllEqual(indices[1][:, 1], [2, 2, 1, 0, 1, 1, 0, 0, 0])

    def test_empty_batches(self):
        for lengths in ([0, 0], np.zeros([0], "int32")):
            sizes, indices, order = packed_recurrence.packing(lengths)
            self.assertEqual(tuple(sizes.shape), (0,))
            self.assertEqual(tuple(indices.shape), (2, 0, 2))
            self.assertEqual(len(order), len(lengths))

    def test_pack_then_unpack_restores_the_real_steps(self):
        lengths = MIXED
        rng = np.random.default_rng(0)
        x = rng.normal(size=(len(lengths), 6, 3)).astype("float32")
        real = np.arange(6)[None, :] < np.asarray(lengths)[:, None]
        _, indices, _ = packed_recurrence.packing(lengths)
        packed = packed_recurrence.pack(x, indices)
        self.assertEqual(tuple(packed.shape), (sum(lengths), 2, 3))
        back = np.asarray(packed_recurrence.unpack(packed, indices, (6, 6)))
        self.assertAllEqual(back[..., :3], x * real[..., None])
        # The backward half reads each row reversed over its length.
        for b, n in enumerate(lengths):
            self.assertAllEqual(
                np.asarray(packed)[:, 1][np.asarray(indices[1][:, 0]) == b],
                x[b, :n][::-1],
            )
        self.assertAllEqual(back[..., 3:], x * real[..., None])


class PackedRecurrenceTest(TestCase):
    def assertRelativeClose(self, actual, expected, tol=1e-5):
        actual, expected = np.asarray(actual), np.asarray(expected)
        scale = np.max(np.abs(expected))
        self.assertGreater(scale, 0.0)
        self.assertLessEqual(np.max(np.abs(actual - expected)) / scale, tol)

    def check_equals_padded(self, lengths, seed, save_for_backward=True):
        padded = padded_arguments(lengths, seed)
        weights = weights_like(lengths, seed + 100)
        expected, expected_grads = run_padded(
            padded, weights, save_for_backward
        )
        results, grads = run_packed(padded, lengths, weights, save_for_backward)
        real = padded[1]
        # Outputs at real steps, final states: within 1e-6 on AVX-512
        # CPUs, 1e-5 relative on AVX2-only ones (tests/cpu_rounding.py).
        at_real = np.moveaxis(np.asarray(expected[0]), 1, 2)[real]
        got = np.moveaxis(results[0], 1, 2)[real]
        self.assertAllClose(got, at_real, atol=1e-6, rtol=on_cpu(0, 1e-5))
        for a, b in zip(results[1:], expected[1:]):
            self.assertAllClose(a, b, atol=1e-6, rtol=on_cpu(0, 1e-5))
        names = ["gates_in", "h0", "c0", "recurrent_kernel", "projection"]
        for name, a, b in zip(names, grads, expected_grads):
            with self.subTest(name=name, lengths=lengths):
                self.assertRelativeClose(a, b, tol=on_cpu(1e-6, 1e-5))
        # The clips bite at real steps, so both gradient paths are used.
        self.assertGreater(np.mean(np.abs(got) == PROJ_CLIP), 0.05)

    def test_equals_padded_loop_mixed_lengths(self):
        self.check_equals_padded(MIXED, seed=1)

    def test_equals_padded_loop_equal_lengths(self):
        self.check_equals_padded(EQUAL, seed=2)

    def test_equals_padded_loop_without_saving(self):
        # Inference: TensorFlow's own gradient of the packed loop.
        self.check_equals_padded(MIXED, seed=3, save_for_backward=False)

    def test_gradients_equal_autodiff_of_the_reference_scan(self):
        lengths = [4, 1, 0, 3]
        padded = padded_arguments(lengths, seed=4)
        weights = weights_like(lengths, seed=5)
        gates, real, h0, c0, u, wp = (tf.constant(x) for x in padded)
        with tf.GradientTape() as tape:
            tape.watch([gates, h0, c0, u, wp])
            out = reference_recurrence(gates, real, h0, c0, u, wp, **CLIPS)
            loss = sum(ops.sum(x * w) for x, w in zip(out, weights))
        expected = tape.gradient(loss, [gates, h0, c0, u, wp])
        _, grads = run_packed(padded, lengths, weights)
        for a, b in zip(grads, expected):
            self.assertRelativeClose(a, b)

    def test_rows_without_steps_keep_their_state(self):
        lengths = [2, 0]
        padded = padded_arguments(lengths, seed=6)
        weights = weights_like(lengths, seed=7)
        (_, h, c), grads = run_packed(padded, lengths, weights)
        self.assertAllEqual(h[:, 1], padded[2][:, 1])
        self.assertAllEqual(c[:, 1], padded[3][:, 1])
        # Their initial state's gradient is the loss weight on it.
        self.assertAllEqual(grads[1][:, 1], weights[1][:, 1])
        self.assertAllEqual(grads[2][:, 1], weights[2][:, 1])

    def test_unknown_shapes_in_tf_function(self):
        spec = [
            tf.TensorSpec((None, 2, 4 * H), "float32"),
            tf.TensorSpec((None,), "int32"),
            tf.TensorSpec((None, 2, P), "float32"),
            tf.TensorSpec((None, 2, H), "float32"),
            tf.TensorSpec((2, P, 4 * H), "float32"),
            tf.TensorSpec((2, H, P), "float32"),
        ]

        @tf.function(input_signature=spec)
        def forward_and_grads(gates, sizes, h0, c0, u, wp):
            with tf.GradientTape() as tape:
                tape.watch([gates, h0, c0, u, wp])
                out, h, c = packed_recurrence.packed_lstm_recurrence(
                    gates, sizes, h0, c0, u, wp, **CLIPS
                )
                loss = ops.sum(out) + ops.sum(c)
            return out, tape.gradient(loss, [gates, h0, c0, u, wp])

        for lengths, seed in ((MIXED, 8), ([2, 1], 9), ([0, 0, 0], 10)):
            padded = padded_arguments(lengths, seed)
            packed = to_packed(padded, lengths) if max(lengths) else None
            if packed is None:  # nothing to run: empty packed inputs
                args = (
                    np.zeros((0, 2, 4 * H), "float32"),
                    np.zeros((0,), "int32"),
                    np.transpose(padded[2], (1, 0, 2)),
                    np.transpose(padded[3], (1, 0, 2)),
                )
            else:
                args = packed[:4]
            out, grads = forward_and_grads(*args, *padded[4:])
            self.assertEqual(tuple(out.shape), (sum(lengths), 2, P))
            eager = packed_recurrence.packed_lstm_recurrence(
                *args, *padded[4:], **CLIPS
            )
            self.assertAllClose(out, eager[0], atol=1e-6, rtol=on_cpu(0, 1e-5))
            if max(lengths) == 0:
                self.assertAllEqual(grads[3], np.zeros_like(padded[4]))

    def test_bfloat16(self):
        lengths = MIXED
        padded = padded_arguments(lengths, seed=11, scale=2.0)
        packed = to_packed(padded, lengths)
        low = [ops.cast(x, "bfloat16") for x in packed[:4] if x.ndim == 3]
        u, wp = (ops.cast(x, "bfloat16") for x in padded[4:])
        out, h, c = packed_recurrence.packed_lstm_recurrence(
            low[0], packed[1], low[1], low[2], u, wp, **CLIPS
        )
        self.assertEqual(out.dtype, "bfloat16")
        self.assertEqual(c.dtype, "bfloat16")
        expected = packed_recurrence.packed_lstm_recurrence(
            *packed[:4], *padded[4:], **CLIPS
        )
        self.assertRelativeClose(
            ops.cast(out, "float32"), expected[0], tol=0.03
        )

    def test_eager_calls_with_other_sizes(self):
        # The eager calls share one traced function per clip setting; a
        # call with other widths must retrace, not reuse shapes.
        for hidden, proj, seed in ((H, P, 12), (2 * H, 3, 13), (H, P, 14)):
            rng = np.random.default_rng(seed)
            sizes = np.array([2, 1], "int32")
            args = [
                rng.normal(size=shape).astype("float32")
                for shape in (
                    (3, 2, 4 * hidden),
                    (2, 2, proj),
                    (2, 2, hidden),
                    (2, proj, 4 * hidden),
                    (2, hidden, proj),
                )
            ]
            out, h, c = packed_recurrence.packed_lstm_recurrence(
                args[0], sizes, *args[1:], **CLIPS
            )
            self.assertEqual(tuple(out.shape), (3, 2, proj))
            self.assertEqual(tuple(c.shape), (2, 2, hidden))
            # Row 1 (one step) ends at packed step 1, row 0 at step 2.
            self.assertAllEqual(h[1], out[1])
            self.assertAllEqual(h[0], out[2])
