import keras
import numpy as np
import pytest

from keras_elmo.layers.char_cnn_embedding import Highway
from keras_elmo.testing import TestCase

B, T, D = 2, 3, 8


def random_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(B, T, D)).astype("float32")


def seeded_blocks(num_layers, seed=1, dim=D):
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(num_layers):
        blocks.append(
            {
                "carry_kernel": rng.normal(size=(dim, dim)) / np.sqrt(dim),
                "carry_bias": rng.normal(size=(dim,)),
                "transform_kernel": rng.normal(size=(dim, dim)),
                "transform_bias": rng.normal(size=(dim,)),
            }
        )
    return [{k: v.astype("float32") for k, v in b.items()} for b in blocks]


def assign(layer, blocks):
    for block, values in zip(layer.blocks, blocks):
        for key, value in values.items():
            block[key].assign(value)


def numpy_highway(x, blocks):
    """bilm-tf's `high`: y = g * relu(x Wt + bt) + (1 - g) * x."""
    x = x.astype("float64")
    for b in blocks:
        g = 1.0 / (1.0 + np.exp(-(x @ b["carry_kernel"] + b["carry_bias"])))
        transform = np.maximum(
            x @ b["transform_kernel"] + b["transform_bias"], 0
        )
        x = g * transform + (1.0 - g) * x
    return x


class HighwayTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=Highway,
            init_kwargs={"num_layers": 2},
            input_data=random_inputs(),
            expected_output_shape=(B, T, D),
            expected_num_trainable_weights=8,
            expected_num_non_trainable_weights=0,
            expected_output_dtype="float32",
            run_mixed_precision_check=True,
        )

    def test_layer_behaviors_custom_initializers(self):
        self.run_layer_test(
            cls=Highway,
            init_kwargs={
                "num_layers": 1,
                "kernel_initializer": "glorot_uniform",
                "carry_bias_initializer": "ones",
                "transform_bias_initializer": "zeros",
            },
            input_data=random_inputs()[:, 0],
            expected_output_shape=(B, D),
            expected_num_trainable_weights=4,
        )

    def test_matches_numpy_two_blocks(self):
        x = random_inputs()
        layer = Highway(num_layers=2)
        layer.build(x.shape)
        blocks = seeded_blocks(2)
        assign(layer, blocks)
        expected = numpy_highway(x, blocks)
        self.assertAllClose(layer(x), expected, atol=1e-5, rtol=1e-5)
        # Each block matters: one block alone gives something else.
        self.assertFalse(np.allclose(expected, numpy_highway(x, blocks[:1])))
        # The gate is neither 0 nor 1, and relu cuts some units.
        first = blocks[0]
        g = 1.0 / (
            1.0 + np.exp(-(x @ first["carry_kernel"] + first["carry_bias"]))
        )
        self.assertTrue(((g > 0.05) & (g < 0.95)).mean() > 0.5)
        self.assertTrue((x @ first["transform_kernel"] < 0).any())

    def test_matches_numpy_via_set_weights(self):
        x = random_inputs(seed=4)
        layer = Highway(num_layers=2)
        layer.build(x.shape)
        blocks = seeded_blocks(2, seed=5)
        order = (
            "carry_kernel",
            "carry_bias",
            "transform_kernel",
            "transform_bias",
        )
        layer.set_weights([b[k] for b in blocks for k in order])
        self.assertAllClose(
            layer(x), numpy_highway(x, blocks), atol=1e-5, rtol=1e-5
        )

    def test_bilm_tf_gate_convention(self):
        # A saturated "carry" gate (g = 1) gives the transform, not x.
        x = random_inputs()
        layer = Highway(num_layers=1)
        layer.build(x.shape)
        blocks = seeded_blocks(1)
        blocks[0]["carry_kernel"][:] = 0.0
        blocks[0]["carry_bias"][:] = 100.0
        assign(layer, blocks)
        transform = np.maximum(
            x @ blocks[0]["transform_kernel"] + blocks[0]["transform_bias"], 0
        )
        self.assertAllClose(layer(x), transform, atol=1e-5, rtol=1e-5)
        blocks[0]["carry_bias"][:] = -100.0
        assign(layer, blocks)
        self.assertAllClose(layer(x), x, atol=0, rtol=0)

    def test_zero_layers_is_identity(self):
        x = random_inputs()
        layer = Highway(num_layers=0)
        self.assertAllClose(layer(x), x, atol=0, rtol=0)
        self.assertLen(layer.weights, 0)

    def test_default_initialization(self):
        layer = Highway(num_layers=2)
        layer.build((None, 16))
        for block in layer.blocks:
            self.assertAllClose(
                block["carry_bias"], np.full((16,), -2.0), atol=0
            )
            self.assertAllClose(block["transform_bias"], np.zeros(16), atol=0)
        # N(0, 1/D): the sample std of 2 x 256 entries is near 0.25.
        kernels = np.concatenate(
            [
                np.asarray(b[k]).ravel()
                for b in layer.blocks
                for k in ("carry_kernel", "transform_kernel")
            ]
        )
        self.assertAlmostEqual(float(kernels.std()), 0.25, delta=0.03)
        self.assertLess(abs(float(kernels.mean())), 0.03)
        # Every kernel is drawn on its own (an unseeded Keras initializer
        # repeats its values on every call).
        first, second = layer.blocks
        self.assertFalse(
            np.allclose(first["carry_kernel"], first["transform_kernel"])
        )
        self.assertFalse(
            np.allclose(first["carry_kernel"], second["carry_kernel"])
        )
        config = layer.get_config()
        self.assertEqual(
            config["carry_bias_initializer"]["config"]["value"], -2.0
        )
        self.assertEqual(
            config["kernel_initializer"]["config"]["mode"], "fan_in"
        )

    def test_default_starts_close_to_identity(self):
        # With b_carry = -2 the gate is about sigmoid(-2) ~ 0.12 for small x.
        x = 0.01 * random_inputs()
        layer = Highway(num_layers=1, kernel_initializer="zeros")
        g = 1.0 / (1.0 + np.exp(2.0))
        self.assertAllClose(layer(x), (1.0 - g) * x, atol=1e-7, rtol=1e-5)

    def test_passes_mask_through(self):
        x = random_inputs()
        x[1, 2] = 0.0
        inputs = keras.Input(shape=(T, D))
        masked = keras.layers.Masking(0.0)(inputs)
        highway = Highway(num_layers=2)
        pooled = keras.layers.GlobalAveragePooling1D()(highway(masked))
        model = keras.Model(inputs, pooled)
        highway.set_weights(
            [
                v
                for b in seeded_blocks(2)
                for v in (
                    b["carry_kernel"],
                    b["carry_bias"],
                    b["transform_kernel"],
                    b["transform_bias"],
                )
            ]
        )
        expected = numpy_highway(x, seeded_blocks(2))
        self.assertAllClose(
            model(x)[1], expected[1, :2].mean(0), atol=1e-5, rtol=1e-5
        )
        mask = np.array([[True] * 3, [True, True, False]])
        self.assertAllEqual(highway.compute_mask(x, mask), mask)

    def test_compute_output_shape(self):
        self.assertEqual(
            Highway(2).compute_output_shape((None, 5, D)), (None, 5, D)
        )

    def test_serialization(self):
        layer = Highway(
            num_layers=2,
            kernel_initializer="he_normal",
            carry_bias_initializer=keras.initializers.Constant(-1.0),
            name="highway",
        )
        self.run_serialization_test(layer, input_data=random_inputs())

    def test_model_saving(self):
        inputs = keras.Input(shape=(None, D))
        model = keras.Model(inputs, Highway(num_layers=2)(inputs))
        self.run_model_saving_test(model, random_inputs())

    def test_invalid_num_layers(self):
        for bad in (-1, 1.5, "2", None):
            with pytest.raises(
                ValueError,
                match=r"`num_layers`, expected a non-negative integer, got "
                + repr(bad).replace(".", r"\."),
            ):
                Highway(num_layers=bad)
