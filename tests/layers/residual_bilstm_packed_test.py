"""`ResidualBiLSTM` over packed steps (the default) vs the padded loop."""

import numpy as np
import tensorflow as tf

from keras_elmo.testing import TestCase
from tests.cpu_rounding import AVX512
from tests.cpu_rounding import on_cpu
from tests.layers.residual_bilstm_reference import CELL_CLIP
from tests.layers.residual_bilstm_reference import PROJ_CLIP
from tests.layers.residual_bilstm_reference import H
from tests.layers.residual_bilstm_reference import L
from tests.layers.residual_bilstm_reference import P
from tests.layers.residual_bilstm_reference import make_layer
from tests.layers.residual_bilstm_reference import numpy_bilstm
from tests.layers.residual_bilstm_reference import seeded_weights

STEPS = 7
MIXED = [7, 0, 1, 4, 7, 2]
EQUAL = [5, 5, 5]


def inputs_for(lengths, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(len(lengths), STEPS, P)).astype("float32")
    mask = np.arange(STEPS)[None, :] < np.asarray(lengths)[:, None]
    state = (
        rng.normal(size=(L, 2, len(lengths), P)).astype("float32"),
        rng.normal(size=(L, 2, len(lengths), H)).astype("float32"),
    )
    return x * mask[..., None], mask, state


def results_and_gradients(layer, x, mask, state, training, packed):
    """Outputs, final states and the gradients of a loss over all of them
    (inputs, initial states, weights), from one path."""
    layer.packed = packed
    rng = np.random.default_rng(99)
    x, h0, c0 = (tf.constant(v) for v in (x, *state))
    with tf.GradientTape() as tape:
        tape.watch([x, h0, c0])
        outputs, (h, c) = layer(
            x,
            mask=mask,
            initial_state=(h0, c0),
            return_state=True,
            training=training,
        )
        results = list(outputs) + [h, c]
        loss = sum(
            tf.reduce_sum(r * rng.normal(size=r.shape).astype("float32"))
            for r in results
        )
    grads = tape.gradient(loss, [x, h0, c0] + layer.trainable_variables)
    return [np.asarray(r) for r in results], [np.asarray(g) for g in grads]


class PackedResidualBiLSTMTest(TestCase):
    def check_paths_agree(self, lengths, seed):
        x, mask, state = inputs_for(lengths, seed)
        layer = make_layer(seeded_weights(seed=seed + 1, scale=1.5))
        self.assertTrue(layer.packed)  # the default
        for training in (True, False):
            packed = results_and_gradients(layer, x, mask, state, training, 1)
            padded = results_and_gradients(layer, x, mask, state, training, 0)
            # Within 1e-6 on AVX-512 CPUs; on AVX2-only ones the loops round
            # differently (3.3e-6 on a 1.5-scale output seen on an EPYC):
            # relative to each array's largest value (tests/cpu_rounding.py).
            for a, b in zip(packed[0], padded[0]):
                if AVX512:
                    self.assertAllClose(a, b, atol=1e-6, rtol=0)
                else:
                    scale = max(float(np.abs(b).max()), 1e-6)
                    self.assertLessEqual(np.abs(a - b).max(), 1e-5 * scale)
            # Gradients: where the two roundings put a cell or projection
            # value on opposite sides of its clip, that step's gradient
            # jumps and the jump flows back through earlier steps (seen on
            # an AVX2-only EPYC: 1% of elements beyond 1e-5, all within
            # 1e-4 of the largest; within 1e-6 on AVX-512).
            for a, b in zip(packed[1], padded[1]):
                scale = np.abs(b).max()
                self.assertGreater(scale, 0)
                diff = np.abs(np.asarray(a) - np.asarray(b))
                self.assertLessEqual(
                    np.median(diff), on_cpu(1e-6, 1e-5) * scale
                )
                self.assertLessEqual(diff.max(), on_cpu(1e-6, 1e-3) * scale)
        # And both equal the NumPy re-derivation.
        expected, (eh, ec) = numpy_bilstm(
            x,
            lengths,
            seeded_weights(seed=seed + 1, scale=1.5),
            initial_state=state,
        )
        outputs = packed[0]
        self.assertAllClose(outputs[:L], expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(outputs[L], eh, atol=1e-5, rtol=1e-5)
        self.assertAllClose(outputs[L + 1], ec, atol=1e-5, rtol=1e-5)

    def test_mixed_lengths_with_empty_and_one_step_rows(self):
        self.check_paths_agree(MIXED, seed=1)

    def test_all_lengths_equal(self):
        self.check_paths_agree(EQUAL, seed=2)

    def test_padding_is_zero_and_clips_bite(self):
        x, mask, _ = inputs_for(MIXED, seed=3)
        layer = make_layer(seeded_weights(seed=4, scale=1.5))
        outputs = [np.asarray(o) for o in layer(x, mask=mask)]
        for out in outputs:
            self.assertFalse(out[~mask].any())
        self.assertGreater(np.mean(np.abs(outputs[0][mask]) == PROJ_CLIP), 0.05)

    def test_batch_independence_across_batch_compositions(self):
        x, mask, _ = inputs_for(MIXED, seed=5)
        layer = make_layer(seeded_weights(seed=6))
        batched = [np.asarray(o) for o in layer(x, mask=mask)]
        # The same rows alone, reversed, and among other rows.
        other, other_mask, _ = inputs_for([3, 7, 6], seed=7)
        for b, n in enumerate(MIXED):
            if n == 0:
                continue
            for rows_x, rows_mask, at in (
                (x[b : b + 1], mask[b : b + 1], 0),
                (x[::-1], mask[::-1], len(MIXED) - 1 - b),
                (
                    np.concatenate([other, x[b : b + 1]]),
                    np.concatenate([other_mask, mask[b : b + 1]]),
                    3,
                ),
            ):
                alone = layer(rows_x, mask=rows_mask)
                for out, single in zip(batched, alone):
                    single = np.asarray(single)[at, :n]
                    diff = np.abs(single - out[b, :n]).max()
                    bound = on_cpu(1e-6, 1e-5) * np.abs(out[b, :n]).max()
                    self.assertLessEqual(diff, bound)

    def test_xla_runs_the_padded_loop(self):
        x, mask, _ = inputs_for(MIXED, seed=8)
        weights = seeded_weights(seed=9)
        layer = make_layer(weights)
        fn = tf.function(lambda x, m: layer(x, mask=m), jit_compile=True)
        expected, _ = numpy_bilstm(x, MIXED, weights)
        self.assertAllClose(fn(x, mask), expected, atol=1e-5, rtol=1e-5)

    def test_saved_model_round_trip(self):
        weights = seeded_weights(seed=10)
        layer = make_layer(weights)
        module = tf.Module()
        module.layer = layer
        module.call = tf.function(
            lambda x, m: layer(x, mask=m),
            input_signature=[
                tf.TensorSpec((None, None, P), "float32"),
                tf.TensorSpec((None, None), "bool"),
            ],
        )
        path = self.get_temp_dir() + "/packed_savedmodel"
        tf.saved_model.save(module, path)
        loaded = tf.saved_model.load(path)
        for lengths, seed in ((MIXED, 11), (EQUAL, 12), ([2, 0], 13)):
            x, mask, _ = inputs_for(lengths, seed)
            expected, _ = numpy_bilstm(x, lengths, weights)
            self.assertAllClose(
                loaded.call(x, mask), expected, atol=1e-5, rtol=1e-5
            )
            layer.packed = False
            padded = layer(x, mask=mask)
            layer.packed = True
            for a, b in zip(loaded.call(x, mask), padded):
                self.assertAllClose(a, b, atol=1e-6, rtol=on_cpu(0, 1e-5))

    def test_training_with_dropout(self):
        x, mask, _ = inputs_for(MIXED, seed=14)
        layer = make_layer(seeded_weights(seed=15), dropout=0.5, seed=3)
        with tf.GradientTape() as tape:
            outputs = layer(x, mask=mask, training=True)
            loss = sum(tf.reduce_sum(o * o) for o in outputs)
        grads = tape.gradient(loss, layer.trainable_variables)
        self.assertTrue(all(np.isfinite(np.asarray(g)).all() for g in grads))
        inference = layer(x, mask=mask)
        self.assertFalse(np.allclose(outputs[0], inference[0]))
        for out in outputs:
            self.assertFalse(np.asarray(out)[~mask].any())
        self.assertEqual(CELL_CLIP, layer.cell_clip)
