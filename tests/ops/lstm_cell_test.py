import numpy as np
import tensorflow as tf

from keras_elmo.ops import lstm_cell
from keras_elmo.testing import TestCase

N, P, H = 3, 4, 5
CLIPS = (0.9, 0.7)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_step(z_in, h_prev, c_prev, u, wp, clips):
    """The cell of one direction in NumPy: `z_in [n, 4H]`, `h_prev [n, P]`,
    `c_prev [n, H]`, `u [P, 4H]`, `wp [H, P]`."""
    z = z_in + h_prev @ u
    i, j, f, o = np.split(z, 4, axis=-1)
    c = sigmoid(i) * np.tanh(j) + sigmoid(f) * c_prev
    if clips[0] is not None:
        c = np.clip(c, -clips[0], clips[0])
    h = (sigmoid(o) * np.tanh(c)) @ wp
    if clips[1] is not None:
        h = np.clip(h, -clips[1], clips[1])
    return h, c


def arguments(seed, axis, scale=3.0):
    """`(z_in, h_prev, c_prev, U, W_proj)`, direction on `axis`; `scale`
    grows the kernels so that both clips bite."""
    rng = np.random.default_rng(seed)

    def normal(*shape, std=1.0):
        return (std * rng.normal(size=shape)).astype("float32")

    def stacked(*shape, std=1.0):
        x = normal(2, *shape, std=std)
        return x if axis == 0 else np.swapaxes(x, 0, 1)

    return (
        stacked(N, 4 * H, std=2.0),
        stacked(N, P, std=0.5),
        stacked(N, H, std=0.5),
        normal(2, P, 4 * H, std=0.5 * scale),
        normal(2, H, P, std=0.5 * scale),
    )


def direction(x, d, axis):
    return np.asarray(x)[d] if axis == 0 else np.asarray(x)[:, d]


class LSTMCellTest(TestCase):
    def test_step_matches_numpy(self):
        for axis in (0, 1):
            for clips in (CLIPS, (None, None)):
                z_in, h_prev, c_prev, u, wp = arguments(0, axis)
                h, c, _, c_raw, h_raw = lstm_cell.step(
                    z_in, h_prev, c_prev, (u, wp), clips, axis=axis
                )
                self.assertEqual(tuple(h.shape), tuple(h_prev.shape))
                self.assertEqual(tuple(c.shape), tuple(c_prev.shape))
                for d in (0, 1):
                    expected_h, expected_c = numpy_step(
                        direction(z_in, d, axis),
                        direction(h_prev, d, axis),
                        direction(c_prev, d, axis),
                        u[d],
                        wp[d],
                        clips,
                    )
                    self.assertAllClose(
                        direction(h, d, axis), expected_h, atol=1e-5
                    )
                    self.assertAllClose(
                        direction(c, d, axis), expected_c, atol=1e-5
                    )
                if clips[0] is not None:
                    # Both clips bite on some values and not on others.
                    inside = np.abs(np.asarray(c_raw)) <= clips[0]
                    self.assertTrue(inside.any() and not inside.all())
                    inside = np.abs(np.asarray(h_raw)) <= clips[1]
                    self.assertTrue(inside.any() and not inside.all())

    def check_backward_equals_autodiff(self, args, clips, axis, seed):
        z_in, h_prev, c_prev, u, wp = (tf.constant(x) for x in args)
        rng = np.random.default_rng(seed)
        w_h = rng.normal(size=h_prev.shape).astype("float32")
        w_c = rng.normal(size=c_prev.shape).astype("float32")
        with tf.GradientTape() as tape:
            tape.watch([z_in, h_prev, c_prev, u, wp])
            h, c, gates, c_raw, h_raw = lstm_cell.step(
                z_in, h_prev, c_prev, (u, wp), clips, axis=axis
            )
            loss = tf.reduce_sum(h * w_h) + tf.reduce_sum(c * w_c)
        expected = tape.gradient(loss, [z_in, h_prev, c_prev, u, wp])

        factors, m = lstm_cell.backward_factors(
            gates, c_prev, c_raw, h_raw, clips
        )
        kernels_t = lstm_cell.transposed_kernels((u, wp))
        dz, dh_raw, dh_prev, dc_prev = lstm_cell.step_backward(
            tf.constant(w_h), tf.constant(w_c), factors, kernels_t, axis=axis
        )
        # kernel_gradients sums over steps with the direction on axis 1.
        steps = (lambda x: x[None]) if axis == 0 else (lambda x: x)
        d_u, d_wp = lstm_cell.kernel_gradients(
            steps(h_prev), steps(dz), steps(m), steps(dh_raw)
        )
        names = ["z_in", "h_prev", "c_prev", "recurrent", "projection"]
        for name, a, b in zip(
            names, (dz, dh_prev, dc_prev, d_u, d_wp), expected
        ):
            with self.subTest(name=name, axis=axis, clips=clips):
                self.assertEqual(tuple(a.shape), tuple(b.shape))
                self.assertAllClose(a, b, atol=1e-5, rtol=1e-5)
                self.assertTrue(np.asarray(b).any())

    def test_step_backward_equals_autodiff(self):
        for axis in (0, 1):
            for clips in (CLIPS, (None, None), (0.9, None)):
                args = arguments(1 + axis, axis)
                self.check_backward_equals_autodiff(args, clips, axis, 10)

    def test_gradient_passes_at_the_clip_bound(self):
        # c_raw = sigmoid(30) * tanh(30) + sigmoid(0) * 0.5 == 1.25 exactly:
        # at the cell clip, which `ops.clip` (and the cell) pass through.
        z_in = np.zeros((2, 1, 4 * H), "float32")
        z_in[..., : 2 * H] = 30.0
        # U reaches only the output gate, so c_raw stays 1.25.
        u = np.zeros((2, P, 4 * H), "float32")
        u[..., 3 * H :] = 0.1
        args = (
            z_in,
            np.full((2, 1, P), 0.1, "float32"),
            np.full((2, 1, H), 0.5, "float32"),
            u,
            np.full((2, H, P), 0.1, "float32"),
        )
        _, _, _, c_raw, _ = lstm_cell.step(*args[:3], args[3:], (1.25, 1.0))
        self.assertAllEqual(c_raw, np.full((2, 1, H), 1.25))
        self.assertAllEqual(
            lstm_cell.clip_passes(c_raw, 1.25), np.ones((2, 1, H))
        )
        self.check_backward_equals_autodiff(args, (1.25, 1.0), 0, 11)

    def test_held_steps_pass_no_gradient_into_the_gates(self):
        z_in, h_prev, c_prev, u, wp = arguments(3, 0)
        _, _, gates, c_raw, h_raw = lstm_cell.step(
            z_in, h_prev, c_prev, (u, wp), CLIPS
        )
        real = np.array([1.0, 0.0, 1.0], "float32")[None, :, None]
        factors, _ = lstm_cell.backward_factors(
            gates, c_prev, c_raw, h_raw, CLIPS, real=real
        )
        kernels_t = lstm_cell.transposed_kernels((u, wp))
        dz, dh_raw, dh_prev, dc_prev = lstm_cell.step_backward(
            tf.ones((2, N, P)), tf.ones((2, N, H)), factors, kernels_t
        )
        for x in (dz, dh_raw, dh_prev, dc_prev):
            x = np.asarray(x)
            self.assertFalse(x[:, 1].any())
            self.assertTrue(x[:, 0].any() and x[:, 2].any())
