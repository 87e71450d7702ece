"""`ResidualBiLSTM` against the NumPy re-derivation (`numpy_bilstm`):
both clips, the forget bias, residuals from layer 2, the backward
direction, padding, empty rows, final and initial states, batch
independence.
"""

import numpy as np

from keras_elmo.testing import TestCase
from tests.layers.residual_bilstm_reference import LENGTHS
from tests.layers.residual_bilstm_reference import PROJ_CLIP
from tests.layers.residual_bilstm_reference import B
from tests.layers.residual_bilstm_reference import H
from tests.layers.residual_bilstm_reference import L
from tests.layers.residual_bilstm_reference import P
from tests.layers.residual_bilstm_reference import T
from tests.layers.residual_bilstm_reference import length_mask
from tests.layers.residual_bilstm_reference import make_layer
from tests.layers.residual_bilstm_reference import numpy_bilstm
from tests.layers.residual_bilstm_reference import random_inputs
from tests.layers.residual_bilstm_reference import seeded_weights


class ResidualBiLSTMNumericsTest(TestCase):
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
