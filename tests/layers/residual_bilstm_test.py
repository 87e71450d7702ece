"""`ResidualBiLSTM` as a Keras layer: the layer harness, weight shapes,
masks through a functional model, `tf.function`, serialization, saving
and argument checks.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.testing import TestCase
from tests.layers.residual_bilstm_reference import CELL_CLIP
from tests.layers.residual_bilstm_reference import LENGTHS
from tests.layers.residual_bilstm_reference import PROJ_CLIP
from tests.layers.residual_bilstm_reference import B
from tests.layers.residual_bilstm_reference import H
from tests.layers.residual_bilstm_reference import L
from tests.layers.residual_bilstm_reference import P
from tests.layers.residual_bilstm_reference import T
from tests.layers.residual_bilstm_reference import assign
from tests.layers.residual_bilstm_reference import length_mask
from tests.layers.residual_bilstm_reference import make_layer
from tests.layers.residual_bilstm_reference import numpy_bilstm
from tests.layers.residual_bilstm_reference import random_inputs
from tests.layers.residual_bilstm_reference import seeded_weights


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

    def test_float64_layer_equals_numpy_float64(self):
        """`dtype="float64"` is float64 inside the recurrence too, packed
        and padded: the NumPy float64 re-derivation to 1e-12 (a float32
        cell state, as before, was ~1e-7 off)."""
        x, mask = random_inputs(seed=28), length_mask()
        weights = seeded_weights(seed=29, scale=2.0)
        expected, _ = numpy_bilstm(x, LENGTHS, weights)
        for packed in (True, False):
            with self.subTest(packed=packed):
                layer = make_layer(weights, dtype="float64")
                layer.packed = packed
                out = layer(ops.cast(x, "float64"), mask=mask)
                for a, b in zip(out, expected):
                    self.assertEqual(a.dtype, "float64")
                    scale = np.abs(b).max()
                    self.assertGreater(scale, 0.5)
                    self.assertLess(
                        np.abs(np.asarray(a) - b).max(), 1e-12 * scale
                    )

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
