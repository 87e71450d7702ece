from unittest import mock

import numpy as np
import tensorflow as tf
from keras import ops

from keras_elmo.layers import residual_bilstm
from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.ops.recurrences import lstm_recurrence
from keras_elmo.testing import TestCase
from tests.cpu_rounding import on_cpu

T, B, P, H = 7, 5, 4, 6
LENGTHS = [7, 4, 1, 6, 3]
CELL_CLIP, PROJ_CLIP = 1.0, 0.8


def reference_recurrence(
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
    """The recurrence as `ResidualBiLSTM` ran it before, differentiated by
    TensorFlow: `keras.ops.scan` over the time-major gates."""
    real = ops.cast(real, gates_in.dtype)
    scanned = ops.concatenate(
        [
            gates_in,
            ops.broadcast_to(
                real[:, None, :, None], ops.shape(gates_in)[:3] + (1,)
            ),
        ],
        axis=-1,
    )

    def step(carry, xs):
        h_prev, c_prev = carry
        z_in, is_real = xs[..., :-1], ops.greater(xs[..., -1:], 0.5)
        z = z_in + ops.einsum("dbp,dpg->dbg", h_prev, recurrent_kernel)
        i, j, f, o = ops.split(z, 4, axis=-1)
        c = ops.sigmoid(i) * ops.tanh(j) + ops.sigmoid(f) * c_prev
        if cell_clip is not None:
            c = ops.clip(c, -cell_clip, cell_clip)
        h = ops.einsum(
            "dbh,dhp->dbp", ops.sigmoid(o) * ops.tanh(c), projection_kernel
        )
        if projection_clip is not None:
            h = ops.clip(h, -projection_clip, projection_clip)
        h = ops.where(is_real, h, h_prev)
        c = ops.where(is_real, c, c_prev)
        return (h, c), (h, c)

    (h, c), (hs, _) = ops.scan(step, (h0, c0), scanned)
    return hs, h, c


def real_steps(lengths=LENGTHS, steps=T):
    """`[T, B]` bool: True while `t < length`."""
    return np.arange(steps)[:, None] < np.asarray(lengths)[None, :]


def random_arguments(seed=0, scale=1.0, batch=B, steps=T):
    """`(gates_in, h0, c0, U, W_proj)`; `scale` grows the kernels so that
    the clips bite."""
    rng = np.random.default_rng(seed)

    def normal(*shape, std=1.0):
        return tf.constant((std * rng.normal(size=shape)).astype("float32"))

    return (
        normal(steps, 2, batch, 4 * H, std=2.0),
        normal(2, batch, P, std=0.5),
        normal(2, batch, H, std=0.5),
        normal(2, P, 4 * H, std=0.5 * scale),
        normal(2, H, P, std=0.5 * scale),
    )


def loss_weights(seed=1, batch=B, steps=T):
    """Random weights for a loss touching every output."""
    rng = np.random.default_rng(seed)
    return tuple(
        tf.constant(rng.normal(size=shape).astype("float32"))
        for shape in ((steps, 2, batch, P), (2, batch, P), (2, batch, H))
    )


def weighted_loss(results, weights):
    return sum(
        ops.sum(ops.cast(x, "float32") * w) for x, w in zip(results, weights)
    )


def gradients(fn, args, real, weights, **clips):
    gates_in, h0, c0, u, wp = args
    with tf.GradientTape() as tape:
        tape.watch([gates_in, h0, c0, u, wp])
        results = fn(gates_in, real, h0, c0, u, wp, **clips)
        loss = weighted_loss(results, weights)
    return results, tape.gradient(loss, [gates_in, h0, c0, u, wp])


class LSTMRecurrenceTest(TestCase):
    def assertRelativeClose(self, actual, expected, tol=1e-5):
        actual, expected = np.asarray(actual), np.asarray(expected)
        scale = np.max(np.abs(expected))
        self.assertGreater(scale, 0.0)
        self.assertLessEqual(np.max(np.abs(actual - expected)) / scale, tol)

    def assertGradientsClose(self, actual, expected):
        """Where two roundings put a value on opposite sides of a clip,
        that step's gradient jumps and the jump flows back (seen on an
        AVX2-only EPYC, and with the thread pools an earlier test left):
        the median element within 1e-5 of the largest, all within 1e-3
        there; every element within 1e-5 on AVX-512 CPUs
        (tests/cpu_rounding.py)."""
        actual, expected = np.asarray(actual), np.asarray(expected)
        scale = np.max(np.abs(expected))
        self.assertGreater(scale, 0.0)
        diff = np.abs(actual - expected)
        self.assertLessEqual(np.median(diff), 1e-5 * scale)
        self.assertLessEqual(np.max(diff), on_cpu(1e-5, 1e-3) * scale)

    def test_forward_matches_previous_loop_exactly(self):
        args = random_arguments(seed=2, scale=3.0)
        real = real_steps()
        gates_in, h0, c0, u, wp = args
        for clips in (
            {"cell_clip": CELL_CLIP, "projection_clip": PROJ_CLIP},
            {},
        ):
            new = lstm_recurrence(gates_in, real, h0, c0, u, wp, **clips)
            old = reference_recurrence(gates_in, real, h0, c0, u, wp, **clips)
            for a, b in zip(new, old):
                self.assertEqual(a.dtype, b.dtype)
                # Bit-identical on AVX-512; AVX2 kernels round differently
                # (2e-6 relative seen on an AVX2-only EPYC).
                self.assertRelativeClose(a, b, tol=on_cpu(0.0, 1e-5))

    def test_held_steps_keep_the_state(self):
        gates_in, h0, c0, u, wp = random_arguments(seed=3)
        real = real_steps()
        outputs, h, c = lstm_recurrence(gates_in, real, h0, c0, u, wp)
        outputs = np.asarray(outputs)
        # Row 2 has one real step: every later output repeats it.
        for t in range(1, T):
            self.assertAllEqual(outputs[t, :, 2], outputs[0, :, 2])
        self.assertAllEqual(h[:, 2], outputs[0, :, 2])
        for b, n in enumerate(LENGTHS):
            self.assertAllEqual(h[:, b], outputs[n - 1, :, b])

    def test_gradients_match_autodiff_with_clipping(self):
        args = random_arguments(seed=4, scale=3.0)
        real = real_steps()
        weights = loss_weights(seed=5)
        clips = {"cell_clip": CELL_CLIP, "projection_clip": PROJ_CLIP}
        # The clips are active on both sides, at real steps.
        outputs, _, c = lstm_recurrence(args[0], real, *args[1:], **clips)
        at_real = np.moveaxis(np.asarray(outputs), 1, 2)[real]
        self.assertGreater(np.mean(np.abs(at_real) == PROJ_CLIP), 0.1)
        self.assertLess(np.mean(np.abs(at_real) == PROJ_CLIP), 0.9)
        self.assertGreater(np.mean(np.abs(np.asarray(c)) == CELL_CLIP), 0.1)

        new, new_grads = gradients(
            lstm_recurrence, args, real, weights, **clips
        )
        old, old_grads = gradients(
            reference_recurrence, args, real, weights, **clips
        )
        for a, b in zip(new, old):
            self.assertRelativeClose(a, b, tol=on_cpu(0.0, 1e-5))
        names = ["gates_in", "h0", "c0", "recurrent_kernel", "projection"]
        for name, a, b in zip(names, new_grads, old_grads):
            with self.subTest(name):
                self.assertEqual(a.shape, b.shape)
                self.assertRelativeClose(a, b)
        # Held steps pass no gradient into their gates.
        d_gates = np.moveaxis(np.asarray(new_grads[0]), 1, 2)
        self.assertFalse(d_gates[~real].any())
        self.assertTrue(d_gates[real].any(-1).all())

    def test_gradients_match_autodiff_without_clipping(self):
        args = random_arguments(seed=6)
        weights = loss_weights(seed=7)
        _, new_grads = gradients(lstm_recurrence, args, real_steps(), weights)
        _, old_grads = gradients(
            reference_recurrence, args, real_steps(), weights
        )
        for a, b in zip(new_grads, old_grads):
            self.assertRelativeClose(a, b)

    def test_gradient_of_one_output_only(self):
        gates_in, h0, c0, u, wp = random_arguments(seed=8, scale=2.0)
        real = real_steps()
        clips = {"cell_clip": CELL_CLIP, "projection_clip": PROJ_CLIP}
        for index in range(3):
            grads = []
            for fn in (lstm_recurrence, reference_recurrence):
                with tf.GradientTape() as tape:
                    tape.watch([gates_in, c0, u])
                    result = fn(gates_in, real, h0, c0, u, wp, **clips)
                    loss = ops.sum(result[index] ** 2)
                grads.append(tape.gradient(loss, [gates_in, c0, u]))
            for a, b in zip(*grads):
                self.assertRelativeClose(a, b)

    def test_gradients_at_the_clip_boundary(self):
        # A cell exactly at the clip value: ops.clip passes gradient there.
        gates_in = np.zeros((2, 2, 1, 4 * H), "float32")
        gates_in[..., :H] = 30.0  # sigmoid(i) == 1
        gates_in[..., H : 2 * H] = 30.0  # tanh(j) == 1
        gates_in = tf.constant(gates_in)
        h0 = tf.zeros((2, 1, P))
        c0 = tf.fill((2, 1, H), 0.5)
        u = tf.zeros((2, P, 4 * H))
        wp = tf.fill((2, H, P), 0.1)
        real = np.ones((2, 1), bool)
        weights = loss_weights(seed=9, batch=1, steps=2)
        args = (gates_in, h0, c0, u, wp)
        # c = 1 * 1 + sigmoid(0) * 0.5 = 1.25 at step 0.
        clips = {"cell_clip": 1.25, "projection_clip": 1.0}
        _, new_grads = gradients(lstm_recurrence, args, real, weights, **clips)
        _, old_grads = gradients(
            reference_recurrence, args, real, weights, **clips
        )
        for a, b in zip(new_grads, old_grads):
            self.assertAllClose(a, b, atol=1e-6, rtol=1e-5)

    def test_unknown_steps_and_batch_in_tf_function(self):
        spec = [
            tf.TensorSpec((None, 2, None, 4 * H), "float32"),
            tf.TensorSpec((None, None), "bool"),
            tf.TensorSpec((2, None, P), "float32"),
            tf.TensorSpec((2, None, H), "float32"),
            tf.TensorSpec((2, P, 4 * H), "float32"),
            tf.TensorSpec((2, H, P), "float32"),
        ]
        clips = {"cell_clip": CELL_CLIP, "projection_clip": PROJ_CLIP}

        @tf.function(input_signature=spec)
        def forward_and_grads(gates_in, real, h0, c0, u, wp):
            with tf.GradientTape() as tape:
                tape.watch([gates_in, h0, c0, u, wp])
                results = lstm_recurrence(
                    gates_in, real, h0, c0, u, wp, **clips
                )
                loss = ops.sum(results[0]) + ops.sum(results[2])
            return results, tape.gradient(loss, [gates_in, h0, c0, u, wp])

        gates_in, h0, c0, u, wp = random_arguments(seed=10, scale=3.0)
        real = real_steps()
        results, grads = forward_and_grads(gates_in, real, h0, c0, u, wp)
        with tf.GradientTape() as tape:
            tape.watch([gates_in, h0, c0, u, wp])
            expected = reference_recurrence(
                gates_in, real, h0, c0, u, wp, **clips
            )
            loss = ops.sum(expected[0]) + ops.sum(expected[2])
        expected_grads = tape.gradient(loss, [gates_in, h0, c0, u, wp])
        for a, b in zip(results, expected):
            self.assertAllClose(a, b, atol=1e-6, rtol=on_cpu(1e-6, 1e-5))
        for a, b in zip(grads, expected_grads):
            self.assertGradientsClose(a, b)
        # Another length and batch through the same trace.
        other = random_arguments(seed=11, batch=2, steps=3)
        results, _ = forward_and_grads(
            other[0], real_steps([3, 2], 3), *other[1:]
        )
        self.assertEqual(tuple(results[0].shape), (3, 2, 2, P))

    def test_bfloat16_inputs(self):
        args = random_arguments(seed=12, scale=2.0)
        real = real_steps()
        weights = loss_weights(seed=13)
        clips = {"cell_clip": CELL_CLIP, "projection_clip": PROJ_CLIP}
        low = [ops.cast(x, "bfloat16") for x in args]
        results, grads = gradients(lstm_recurrence, low, real, weights, **clips)
        for x in results:
            self.assertEqual(x.dtype, "bfloat16")
        for g, x in zip(grads, low):
            self.assertEqual(g.dtype, x.dtype)
        # Close to float32: the gates and the cell state are float32.
        expected, expected_grads = gradients(
            reference_recurrence, args, real, weights, **clips
        )
        for a, b in zip(results, expected):
            self.assertRelativeClose(ops.cast(a, "float32"), b, tol=0.03)
        for a, b in zip(grads, expected_grads):
            self.assertRelativeClose(ops.cast(a, "float32"), b, tol=0.03)

    def test_float64_inputs_stay_float64(self):
        """A float64 recurrence keeps its gates and cell state in float64
        (`lstm_cell.state_dtype`): outputs and hand-written gradients
        equal TensorFlow's float64 autodiff to 1e-12, where a float32
        state would leave ~1e-7."""
        args = [ops.cast(x, "float64") for x in random_arguments(seed=15)]
        real = real_steps()
        weights = loss_weights(seed=16)
        clips = {"cell_clip": CELL_CLIP, "projection_clip": PROJ_CLIP}
        results, grads = gradients(
            lstm_recurrence, args, real, weights, **clips
        )
        expected, expected_grads = gradients(
            reference_recurrence, args, real, weights, **clips
        )
        for a, b in zip(results, expected):
            self.assertEqual(a.dtype, "float64")
            self.assertRelativeClose(a, b, tol=1e-12)
        for a, b in zip(grads, expected_grads):
            self.assertEqual(a.dtype, "float64")
            self.assertRelativeClose(a, b, tol=1e-12)

    def test_residual_bilstm_gradients_match_autodiff(self):
        rng = np.random.default_rng(14)
        layer = ResidualBiLSTM(
            H, P, num_layers=2, cell_clip=CELL_CLIP, projection_clip=PROJ_CLIP
        )
        layer.build((None, None, P))
        # The padded loop (the packed one is tested against it in
        # residual_bilstm_packed_test.py).
        layer.packed = False
        for v in layer.trainable_variables:
            v.assign(3.0 * rng.normal(size=v.shape).astype("float32"))
        x = tf.constant(rng.normal(size=(B, T, P)).astype("float32"))
        mask = tf.constant(real_steps().T)
        target = tf.constant(rng.normal(size=(B, T, 2 * P)).astype("float32"))

        def run():
            with tf.GradientTape() as tape:
                tape.watch(x)
                # training=True: the loop with the hand-written gradient.
                outputs = layer(x, mask=mask, training=training)
                loss = sum(ops.sum(y * target) for y in outputs)
            return outputs, tape.gradient(loss, [x] + layer.trainable_variables)

        training = True
        outputs, grads = run()
        with mock.patch.object(
            residual_bilstm, "lstm_recurrence", reference_recurrence
        ):
            expected, expected_grads = run()
        for a, b in zip(outputs, expected):
            self.assertRelativeClose(a, b, tol=on_cpu(0.0, 1e-5))
        for a, b in zip(grads, expected_grads):
            self.assertGradientsClose(a, b)
        # training=False: the forward-only loop (nothing saved for
        # backward) gives the same outputs, and TensorFlow's own gradient.
        training = False
        inference, inference_grads = run()
        for a, b in zip(inference, expected):
            self.assertRelativeClose(a, b, tol=on_cpu(0.0, 1e-5))
        for a, b in zip(inference_grads, expected_grads):
            self.assertGradientsClose(a, b)
