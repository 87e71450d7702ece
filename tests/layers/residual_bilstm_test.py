import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.testing.test_case import TestCase

B, T, P, H, L = 4, 6, 4, 8, 2
LENGTHS = [6, 3, 1, 4]
CELL_CLIP, PROJ_CLIP = 3.0, 1.5


def length_mask(lengths=LENGTHS, steps=T):
    return np.arange(steps)[None, :] < np.asarray(lengths)[:, None]


def random_inputs(seed=0, lengths=LENGTHS):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(len(lengths), T, P)).astype("float32")
    return x * length_mask(lengths)[..., None]


def seeded_weights(seed=1, num_layers=L, scale=1.0):
    """Per layer `(W, U, b, W_proj)`, each stacked over [fwd, bwd]."""
    rng = np.random.default_rng(seed)
    weights = []
    for _ in range(num_layers):
        weights.append(
            tuple(
                (scale * rng.normal(size=(2,) + shape)).astype("float32")
                for shape in ((P, 4 * H), (P, 4 * H), (4 * H,), (H, P))
            )
        )
    return weights


def assign(layer, weights):
    for k, (w, u, b, wp) in enumerate(weights):
        layer.kernels[k].assign(w)
        layer.recurrent_kernels[k].assign(u)
        layer.biases[k].assign(b)
        layer.projection_kernels[k].assign(wp)


def make_layer(weights, **kwargs):
    kwargs.setdefault("cell_clip", CELL_CLIP)
    kwargs.setdefault("projection_clip", PROJ_CLIP)
    layer = ResidualBiLSTM(H, P, num_layers=len(weights), **kwargs)
    layer.build((None, None, P))
    assign(layer, weights)
    return layer


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_bilstm(
    x,
    lengths,
    weights,
    cell_clip=CELL_CLIP,
    proj_clip=PROJ_CLIP,
    skip=True,
    forget_bias=1.0,
    initial_state=None,
    stats=None,
):
    """Re-derives bilm-tf's biLM LSTM stacks row by row in float64.

    Returns `(outputs, (h, c))`: `L` arrays `[B, T, 2P]` and the final
    states `[L, 2, B, P]`, `[L, 2, B, H]`. `stats` counts clipped values.
    """
    x = np.asarray(x, "float64")
    batch, steps = x.shape[:2]
    num_layers = len(weights)
    outputs = np.zeros((num_layers, batch, steps, 2 * P))
    final_h = np.zeros((num_layers, 2, batch, P))
    final_c = np.zeros((num_layers, 2, batch, H))
    for b in range(batch):
        n = lengths[b]
        for d in range(2):
            seq = x[b, :n] if d == 0 else x[b, :n][::-1]
            for k, (w, u, bias, wp) in enumerate(weights):
                w, u, bias, wp = (
                    np.asarray(a[d], "float64") for a in (w, u, bias, wp)
                )
                if initial_state is None:
                    h, c = np.zeros(P), np.zeros(H)
                else:
                    h = np.asarray(initial_state[0][k, d, b], "float64")
                    c = np.asarray(initial_state[1][k, d, b], "float64")
                out = []
                for t in range(n):
                    z = seq[t] @ w + h @ u + bias
                    i, j, f, o = np.split(z, 4)
                    c = sigmoid(i) * np.tanh(j) + sigmoid(f + forget_bias) * c
                    if cell_clip is not None:
                        if stats is not None:
                            stats["cell"] += int((np.abs(c) > cell_clip).sum())
                        c = np.clip(c, -cell_clip, cell_clip)
                    h = (sigmoid(o) * np.tanh(c)) @ wp
                    if proj_clip is not None:
                        if stats is not None:
                            stats["proj"] += int((np.abs(h) > proj_clip).sum())
                        h = np.clip(h, -proj_clip, proj_clip)
                    out.append(h)
                out = np.array(out).reshape(n, P)
                if k > 0 and skip:
                    out = out + seq
                final_h[k, d, b], final_c[k, d, b] = h, c
                restored = out if d == 0 else out[::-1]
                outputs[k, b, :n, d * P : (d + 1) * P] = restored
                seq = out
    return list(outputs), (final_h, final_c)


class ResidualBiLSTMTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=ResidualBiLSTM,
            init_kwargs={
                "units": H,
                "projection_dim": P,
                "num_layers": L,
                "cell_clip": CELL_CLIP,
                "projection_clip": PROJ_CLIP,
            },
            input_data=random_inputs(),
            expected_output_shape=[(B, T, 2 * P)] * L,
            expected_num_trainable_weights=4 * L,
            expected_num_non_trainable_weights=0,
            expected_output_dtype="float32",
            run_mixed_precision_check=True,
        )

    def test_layer_behaviors_one_layer_no_clip(self):
        self.run_layer_test(
            cls=ResidualBiLSTM,
            init_kwargs={
                "units": 6,
                "projection_dim": P,
                "num_layers": 1,
                "use_skip_connections": False,
                "forget_bias": 0.0,
                "bias_initializer": "ones",
            },
            input_data=random_inputs(),
            expected_output_shape=[(B, T, 2 * P)],
            expected_num_trainable_weights=4,
        )

    def test_weight_shapes(self):
        layer = ResidualBiLSTM(H, P, num_layers=3)
        layer.build((None, None, P))
        for k in range(3):
            self.assertEqual(tuple(layer.kernels[k].shape), (2, P, 4 * H))
            self.assertEqual(
                tuple(layer.recurrent_kernels[k].shape), (2, P, 4 * H)
            )
            self.assertEqual(tuple(layer.biases[k].shape), (2, 4 * H))
            self.assertEqual(
                tuple(layer.projection_kernels[k].shape), (2, H, P)
            )
        # The directions and layers are initialised independently (an
        # unseeded Keras initializer repeats its values on every call).
        for weights in (
            layer.kernels,
            layer.recurrent_kernels,
            layer.projection_kernels,
        ):
            values = np.asarray(weights[0])
            self.assertFalse(np.allclose(values[0], values[1]))
            self.assertFalse(np.allclose(weights[0], weights[1]))

    def test_matches_numpy_with_padding_and_both_clips(self):
        x, mask = random_inputs(), length_mask()
        weights = seeded_weights()
        layer = make_layer(weights)
        stats = {"cell": 0, "proj": 0}
        expected, (h, c) = numpy_bilstm(x, LENGTHS, weights, stats=stats)
        # The weights are large enough for both clips to act, but not so
        # large that everything saturates.
        self.assertGreater(stats["cell"], 5)
        self.assertGreater(stats["proj"], 5)
        self.assertGreater(np.sum(np.abs(expected[0]) < PROJ_CLIP - 0.1), 20)
        outputs = layer(x, mask=mask)
        self.assertLen(outputs, L)
        self.assertAllClose(outputs, expected, atol=1e-5, rtol=1e-5)
        # Without clipping the reference is different: the clips are tested.
        unclipped, _ = numpy_bilstm(x, LENGTHS, weights, None, None)
        self.assertFalse(np.allclose(unclipped[1], expected[1], atol=1e-3))
        no_cell_clip, _ = numpy_bilstm(x, LENGTHS, weights, None, PROJ_CLIP)
        self.assertFalse(np.allclose(no_cell_clip[1], expected[1], atol=1e-3))

    def test_clip_none_matches_numpy(self):
        x, mask = random_inputs(seed=3), length_mask()
        weights = seeded_weights(seed=4)
        layer = make_layer(weights, cell_clip=None, projection_clip=None)
        expected, _ = numpy_bilstm(x, LENGTHS, weights, None, None)
        self.assertAllClose(layer(x, mask=mask), expected, atol=1e-5, rtol=1e-5)

    def test_forget_bias_added_at_run_time(self):
        x, mask = random_inputs(seed=5), length_mask()
        weights = seeded_weights(seed=6, scale=0.5)
        layer = make_layer(weights)
        self.assertEqual(layer.forget_bias, 1.0)
        expected, _ = numpy_bilstm(x, LENGTHS, weights)
        self.assertAllClose(layer(x, mask=mask), expected, atol=1e-5, rtol=1e-5)
        # The stored bias is unchanged by the run-time forget bias.
        self.assertAllClose(layer.biases[0], weights[0][2], atol=0)
        zero = make_layer(weights, forget_bias=0.0)
        expected_zero, _ = numpy_bilstm(x, LENGTHS, weights, forget_bias=0.0)
        self.assertAllClose(
            zero(x, mask=mask), expected_zero, atol=1e-5, rtol=1e-5
        )
        self.assertFalse(np.allclose(expected_zero[0], expected[0], atol=1e-3))

    def test_skip_connection_only_from_layer_two(self):
        x, mask = random_inputs(seed=7), length_mask()
        weights = seeded_weights(seed=8, num_layers=3)
        expected, _ = numpy_bilstm(x, LENGTHS, weights)
        self.assertAllClose(
            make_layer(weights)(x, mask=mask), expected, atol=1e-5, rtol=1e-5
        )
        no_skip, _ = numpy_bilstm(x, LENGTHS, weights, skip=False)
        self.assertAllClose(
            make_layer(weights, use_skip_connections=False)(x, mask=mask),
            no_skip,
            atol=1e-5,
            rtol=1e-5,
        )
        # Layer 1 is the same either way; from layer 2 on it is not.
        self.assertAllClose(no_skip[0], expected[0], atol=0)
        self.assertFalse(np.allclose(no_skip[1], expected[1], atol=1e-3))
        # One layer's output is unbounded by the projection clip only
        # through the residual.
        self.assertLessEqual(np.abs(expected[0]).max(), PROJ_CLIP)
        self.assertGreater(np.abs(expected[1]).max(), PROJ_CLIP)

    def test_backward_reads_each_row_reversed_over_its_length(self):
        x, mask = random_inputs(seed=9), length_mask()
        weights = seeded_weights(seed=10, num_layers=1)
        layer = make_layer(weights)
        outputs = np.asarray(layer(x, mask=mask)[0])
        # Row 1 (length 3) alone, reversed by hand: its backward output
        # equals the forward output of a layer whose forward weights are
        # the backward ones, run on the reversed tokens.
        swapped = [tuple(a[::-1] for a in weights[0])]
        flipped = make_layer(swapped)
        reversed_row = x[1:2].copy()
        reversed_row[0, :3] = x[1, :3][::-1]
        out = np.asarray(flipped(reversed_row, mask=mask[1:2])[0])
        self.assertAllClose(
            outputs[1, :3, P:], out[0, :3, :P][::-1], atol=1e-6, rtol=1e-6
        )

    def test_padded_steps_are_zero_and_do_not_leak(self):
        x, mask = random_inputs(seed=11), length_mask()
        layer = make_layer(seeded_weights(seed=12))
        outputs = [np.asarray(o) for o in layer(x, mask=mask)]
        noisy = x.copy()
        noisy[~mask] = np.random.default_rng(0).normal(
            scale=10.0, size=noisy[~mask].shape
        )
        noisy_outputs = [np.asarray(o) for o in layer(noisy, mask=mask)]
        for out, noisy_out in zip(outputs, noisy_outputs):
            self.assertTrue((out[~mask] == 0.0).all())
            self.assertTrue((noisy_out[~mask] == 0.0).all())
            self.assertAllClose(noisy_out[mask], out[mask], atol=0, rtol=0)
        # And the real steps are not trivially zero.
        self.assertTrue((np.abs(outputs[0][mask]) > 0).mean() > 0.9)

    def test_no_mask_means_every_step_is_real(self):
        x = random_inputs(seed=13, lengths=[T] * B)
        weights = seeded_weights(seed=14)
        expected, _ = numpy_bilstm(x, [T] * B, weights)
        self.assertAllClose(
            make_layer(weights)(x), expected, atol=1e-5, rtol=1e-5
        )

    def test_empty_row(self):
        lengths = [3, 0]
        x = random_inputs(seed=15, lengths=lengths)
        weights = seeded_weights(seed=16)
        outputs, (h, c) = make_layer(weights)(
            x, mask=length_mask(lengths), return_state=True
        )
        expected, _ = numpy_bilstm(x, lengths, weights)
        self.assertAllClose(outputs, expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(h[:, :, 1], np.zeros((L, 2, P)), atol=0)
        self.assertAllClose(c[:, :, 1], np.zeros((L, 2, H)), atol=0)

    def test_return_state_matches_numpy(self):
        x, mask = random_inputs(seed=17), length_mask()
        weights = seeded_weights(seed=18)
        outputs, (h, c) = make_layer(weights)(x, mask=mask, return_state=True)
        expected, (expected_h, expected_c) = numpy_bilstm(x, LENGTHS, weights)
        self.assertEqual(tuple(h.shape), (L, 2, B, P))
        self.assertEqual(tuple(c.shape), (L, 2, B, H))
        self.assertAllClose(outputs, expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(h, expected_h, atol=1e-5, rtol=1e-5)
        self.assertAllClose(c, expected_c, atol=1e-5, rtol=1e-5)
        h = np.asarray(h)
        for b, n in enumerate(LENGTHS):
            # Forward: the output after the last real token (no residual on
            # layer 1); backward: the output at position 0.
            self.assertAllClose(
                h[0, 0, b], expected[0][b, n - 1, :P], atol=1e-5
            )
            self.assertAllClose(h[0, 1, b], expected[0][b, 0, P:], atol=1e-5)
        # Padding at the end does not move the final states.
        longer = np.concatenate([x, np.ones((B, 3, P), "float32")], axis=1)
        mask_longer = length_mask(LENGTHS, T + 3)
        _, (h2, c2) = make_layer(weights)(
            longer, mask=mask_longer, return_state=True
        )
        self.assertAllClose(h2, h, atol=1e-6, rtol=1e-6)
        self.assertAllClose(c2, expected_c, atol=1e-5, rtol=1e-5)

    def test_initial_state_is_used(self):
        x, mask = random_inputs(seed=19), length_mask()
        weights = seeded_weights(seed=20)
        rng = np.random.default_rng(21)
        h0 = rng.uniform(-1, 1, size=(L, 2, B, P)).astype("float32")
        c0 = rng.uniform(-2, 2, size=(L, 2, B, H)).astype("float32")
        layer = make_layer(weights)
        outputs, (h, c) = layer(
            x, mask=mask, initial_state=(h0, c0), return_state=True
        )
        expected, (expected_h, expected_c) = numpy_bilstm(
            x, LENGTHS, weights, initial_state=(h0, c0)
        )
        self.assertAllClose(outputs, expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(h, expected_h, atol=1e-5, rtol=1e-5)
        self.assertAllClose(c, expected_c, atol=1e-5, rtol=1e-5)
        zero_state, _ = numpy_bilstm(x, LENGTHS, weights)
        for k in range(L):
            self.assertFalse(np.allclose(expected[k], zero_state[k], atol=1e-3))
        # An explicit zero state equals no state.
        zeros = (np.zeros_like(h0), np.zeros_like(c0))
        self.assertAllClose(
            layer(x, mask=mask, initial_state=zeros),
            layer(x, mask=mask),
            atol=0,
            rtol=0,
        )

    def test_batch_independence(self):
        x, mask = random_inputs(seed=22), length_mask()
        layer = make_layer(seeded_weights(seed=23))
        batched = [np.asarray(o) for o in layer(x, mask=mask)]
        for b, n in enumerate(LENGTHS):
            for row_x, row_mask in (
                (x[b : b + 1], mask[b : b + 1]),
                (x[b : b + 1, :n], None),
            ):
                alone = layer(row_x, mask=row_mask)
                for out, single in zip(batched, alone):
                    single = np.asarray(single)[0, :n]
                    diff = np.abs(single - out[b, :n]).max()
                    self.assertLessEqual(diff, 1e-6 * np.abs(out[b, :n]).max())

    def test_masking_in_functional_model(self):
        x, mask = random_inputs(seed=24), length_mask()
        weights = seeded_weights(seed=25)
        inputs = keras.Input(shape=(None, P))
        masked = keras.layers.Masking(0.0)(inputs)
        lstm = ResidualBiLSTM(
            H, P, cell_clip=CELL_CLIP, projection_clip=PROJ_CLIP
        )
        outputs = lstm(masked)
        pooled = keras.layers.GlobalAveragePooling1D()(outputs[1])
        model = keras.Model(inputs, outputs + [pooled])
        assign(lstm, weights)
        *out, pool = model(x)
        expected, _ = numpy_bilstm(x, LENGTHS, weights)
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
        # The mask is passed on: the mean skips the padded steps.
        self.assertAllClose(
            pool[1], expected[1][1, :3].mean(0), atol=1e-5, rtol=1e-5
        )
        returned = lstm.compute_mask(x, mask)
        self.assertLen(returned, L)
        for m in returned:
            self.assertAllEqual(m, mask)

    def test_inside_tf_function(self):
        x, mask = random_inputs(seed=26), length_mask()
        weights = seeded_weights(seed=27)
        layer = make_layer(weights)
        fn = tf.function(lambda x, m: layer(x, mask=m), jit_compile=False)
        expected, _ = numpy_bilstm(x, LENGTHS, weights)
        self.assertAllClose(fn(x, mask), expected, atol=1e-5, rtol=1e-5)

    def test_compute_output_shape(self):
        layer = ResidualBiLSTM(H, P, num_layers=3)
        self.assertEqual(
            layer.compute_output_shape((None, None, P)),
            [(None, None, 2 * P)] * 3,
        )

    def test_serialization(self):
        layer = ResidualBiLSTM(
            H,
            P,
            num_layers=2,
            cell_clip=3,
            projection_clip=2,
            use_skip_connections=False,
            forget_bias=0.5,
            recurrent_initializer="glorot_uniform",
            name="lstm",
        )
        self.run_serialization_test(layer, input_data=random_inputs())
        self.assertEqual(layer.get_config()["cell_clip"], 3.0)

    def test_model_saving(self):
        inputs = keras.Input(shape=(None, P))
        masked = keras.layers.Masking(0.0)(inputs)
        outputs = ResidualBiLSTM(
            H, P, cell_clip=CELL_CLIP, projection_clip=PROJ_CLIP
        )(masked)
        model = keras.Model(inputs, keras.layers.Concatenate()(outputs))
        self.run_model_saving_test(model, random_inputs())

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="`units`.*got 0"):
            ResidualBiLSTM(0, P)
        with pytest.raises(ValueError, match="`projection_dim`.*got 2.0"):
            ResidualBiLSTM(H, 2.0)
        with pytest.raises(ValueError, match="`num_layers`.*got -1"):
            ResidualBiLSTM(H, P, num_layers=-1)
        with pytest.raises(ValueError, match="`cell_clip`.*got 0"):
            ResidualBiLSTM(H, P, cell_clip=0)
        with pytest.raises(ValueError, match="`projection_clip`.*got -1"):
            ResidualBiLSTM(H, P, projection_clip=-1.0)
        with pytest.raises(ValueError, match="`projection_dim`=4"):
            ResidualBiLSTM(H, P)(np.zeros((1, 2, P + 1), "float32"))
