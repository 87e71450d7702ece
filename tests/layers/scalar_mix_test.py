import keras
import numpy as np
import pytest

from keras_elmo.layers.scalar_mix import ScalarMix
from keras_elmo.testing import TestCase

B, T, D, L = 2, 5, 4, 3


def random_layers(seed=0, num_layers=L):
    rng = np.random.default_rng(seed)
    return [
        rng.normal(size=(B, T, D)).astype("float32") for _ in range(num_layers)
    ]


def padding_mask():
    # Sentence 0 has 5 real tokens, sentence 1 has 2.
    return np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=bool)


def numpy_scalar_mix(tensors, s, gamma, mask=None, layer_norm=False):
    """Re-derives AllenNLP's ScalarMix in float64."""
    s = np.asarray(s, dtype="float64")
    weights = np.exp(s - s.max()) / np.sum(np.exp(s - s.max()))
    tensors = [np.asarray(t, dtype="float64") for t in tensors]
    if layer_norm:
        if mask is None:
            mask = np.ones(tensors[0].shape[:-1], dtype=bool)
        m = mask.astype("float64")[..., None]
        n = m.sum() * tensors[0].shape[-1]
        normed = []
        for t in tensors:
            mean = (t * m).sum() / n
            var = (((t - mean) * m) ** 2).sum() / n
            normed.append((t - mean) / np.sqrt(var + 1e-12))
        tensors = normed
    return gamma * sum(w * t for w, t in zip(weights, tensors))


class ScalarMixTest(TestCase):
    def test_layer_behaviors_list_input(self):
        self.run_layer_test(
            cls=ScalarMix,
            init_kwargs={"num_layers": L},
            input_data=random_layers(),
            expected_output_shape=(B, T, D),
            expected_num_trainable_weights=2,
            expected_num_non_trainable_weights=0,
            expected_output_dtype="float32",
            run_mixed_precision_check=True,
        )

    def test_layer_behaviors_stacked_input_with_layer_norm(self):
        self.run_layer_test(
            cls=ScalarMix,
            init_kwargs={
                "num_layers": L,
                "do_layer_norm": True,
                "initial_scalar_parameters": [0.1, -0.2, 0.3],
                "l2_coef": 0.01,
                "gamma_initializer": 0.5,
            },
            input_data=np.stack(random_layers(), axis=1),
            expected_output_shape=(B, T, D),
            expected_num_trainable_weights=2,
            expected_num_non_trainable_weights=0,
            expected_output_dtype="float32",
            run_mixed_precision_check=True,
        )

    def test_layer_behaviors_fixed_parameters(self):
        self.run_layer_test(
            cls=ScalarMix,
            init_kwargs={
                "num_layers": L,
                "scalar_mix_parameters": [1.0, 2.0, 3.0],
            },
            input_data=random_layers(),
            expected_output_shape=(B, T, D),
            expected_num_trainable_weights=0,
            expected_num_non_trainable_weights=2,
        )

    def test_matches_numpy(self):
        s, gamma = [0.5, -1.0, 2.0], 1.7
        layers = random_layers()
        mix = ScalarMix(L, initial_scalar_parameters=s, gamma_initializer=gamma)
        self.assertAllClose(
            mix(layers), numpy_scalar_mix(layers, s, gamma), atol=1e-5
        )

    def test_default_is_plain_average(self):
        layers = random_layers()
        self.assertAllClose(ScalarMix(L)(layers), sum(layers) / L, atol=1e-6)

    def test_matches_numpy_layer_norm_with_padding_mask(self):
        s, gamma = [0.2, 0.0, -0.7], 0.8
        layers, mask = random_layers(), padding_mask()
        mix = ScalarMix(
            L,
            do_layer_norm=True,
            initial_scalar_parameters=s,
            gamma_initializer=gamma,
        )
        expected = numpy_scalar_mix(layers, s, gamma, mask, layer_norm=True)
        self.assertAllClose(mix(layers, mask=mask), expected, atol=1e-5)
        # The padding really matters: statistics over all positions differ.
        unmasked = numpy_scalar_mix(layers, s, gamma, layer_norm=True)
        self.assertFalse(np.allclose(expected, unmasked, atol=1e-3))

    def test_layer_norm_without_mask_uses_every_position(self):
        layers = random_layers()
        mix = ScalarMix(L, do_layer_norm=True)
        expected = numpy_scalar_mix(layers, [0.0] * L, 1.0, layer_norm=True)
        self.assertAllClose(mix(layers), expected, atol=1e-5)

    def test_stacked_input_equals_list_input(self):
        layers = random_layers()
        mix = ScalarMix(
            L, do_layer_norm=True, initial_scalar_parameters=[1.0, 0.0, -1.0]
        )
        mask = padding_mask()
        self.assertAllClose(
            mix(np.stack(layers, axis=1), mask=mask),
            mix(layers, mask=mask),
            atol=1e-6,
        )

    def test_masked_layer_norm_ignores_padded_values(self):
        layers, mask = random_layers(), padding_mask()
        mix = ScalarMix(L, do_layer_norm=True)
        changed = [t.copy() for t in layers]
        for t in changed:
            t[~mask] = 1000.0
        real = mask[..., None].repeat(D, axis=-1)
        out = np.asarray(mix(layers, mask=mask))
        out_changed = np.asarray(mix(changed, mask=mask))
        self.assertAllClose(out[real], out_changed[real], atol=1e-5)
        self.assertFalse(np.allclose(out[~real], out_changed[~real]))

    def test_fixed_parameters_are_frozen_and_gamma_is_one(self):
        s = [-9e10, 1.0, -9e10]
        layers = random_layers()
        mix = ScalarMix(L, scalar_mix_parameters=s, l2_coef=1.0)
        output = mix(layers)
        self.assertLen(mix.trainable_weights, 0)
        self.assertAllClose(mix.gamma, 1.0, atol=0)
        self.assertAllClose(mix.scalar_parameters, s, atol=0)
        # Only the middle layer is selected; no penalty on frozen weights.
        self.assertAllClose(output, layers[1], atol=1e-6)
        self.assertLen(mix.losses, 0)

    def test_l2_penalty_value(self):
        s = [0.5, -1.0, 2.0]
        mix = ScalarMix(L, initial_scalar_parameters=s, l2_coef=0.01)
        mix(random_layers())
        self.assertLen(mix.losses, 1)
        self.assertAllClose(mix.losses[0], 0.01 * (0.25 + 1.0 + 4.0))
        self.assertLen(ScalarMix(L, initial_scalar_parameters=s).losses, 0)

    def test_l2_penalty_in_functional_model_loss(self):
        s = [0.5, -1.0, 2.0]
        inputs = [keras.Input(shape=(T, D)) for _ in range(L)]
        mix = ScalarMix(L, initial_scalar_parameters=s, l2_coef=0.1)
        model = keras.Model(inputs, mix(inputs))
        self.assertLen(model.losses, 1)
        layers = random_layers()
        targets = np.zeros((B, T, D), "float32")
        model.compile(optimizer=keras.optimizers.SGD(0.0), loss="mse")
        loss = model.evaluate(layers, targets, verbose=0)
        mse = np.mean(numpy_scalar_mix(layers, s, 1.0) ** 2)
        self.assertAllClose(loss, mse + 0.1 * 5.25, atol=1e-5)

    def test_trainable_false_freezes_weights(self):
        mix = ScalarMix(L, l2_coef=0.1, trainable=False)
        mix(random_layers())
        self.assertLen(mix.trainable_weights, 0)
        self.assertLen(mix.non_trainable_weights, 2)
        self.assertLen(mix.losses, 0)

    def test_masking_in_functional_model(self):
        layers, mask = random_layers(), padding_mask()
        for t in layers:
            t[~mask] = 0.0
        inputs = [keras.Input(shape=(T, D)) for _ in range(L)]
        masked = [keras.layers.Masking(0.0)(x) for x in inputs]
        mix = ScalarMix(L, do_layer_norm=True)
        output = mix(masked)
        # A downstream layer that consumes the mask sees the padding.
        pooled = keras.layers.GlobalAveragePooling1D()(output)
        model = keras.Model(inputs, [output, pooled])
        out, pool = model(layers)
        expected = numpy_scalar_mix(layers, [0.0] * L, 1.0, mask, True)
        self.assertAllClose(out, expected, atol=1e-5)
        self.assertAllClose(pool[1], expected[1, :2].mean(axis=0), atol=1e-5)

    def test_output_mask_is_first_input_mask(self):
        mask = padding_mask()
        mix = ScalarMix(L)
        self.assertAllEqual(mix.compute_mask(None, [mask, None, None]), mask)
        self.assertAllEqual(mix.compute_mask(None, mask), mask)
        self.assertIsNone(mix.compute_mask(None, [None] * L))

    def test_compute_output_shape(self):
        mix = ScalarMix(L)
        self.assertEqual(
            mix.compute_output_shape([(None, 7, D)] * L), (None, 7, D)
        )
        self.assertEqual(
            mix.compute_output_shape((None, L, 7, D)), (None, 7, D)
        )

    def test_serialization(self):
        mix = ScalarMix(
            L,
            do_layer_norm=True,
            initial_scalar_parameters=[0.1, 0.2, 0.3],
            l2_coef=0.001,
            gamma_initializer=2.0,
            name="mix",
        )
        self.run_serialization_test(mix, input_data=random_layers())
        fixed = ScalarMix(L, scalar_mix_parameters=[1.0, 0.0, 0.0])
        self.run_serialization_test(fixed, input_data=random_layers())

    def test_model_saving(self):
        inputs = [keras.Input(shape=(None, D)) for _ in range(L)]
        masked = [keras.layers.Masking(0.0)(x) for x in inputs]
        mix = ScalarMix(
            L,
            do_layer_norm=True,
            initial_scalar_parameters=[0.3, -0.1, 0.9],
            l2_coef=0.01,
            gamma_initializer=1.5,
        )
        output = keras.layers.Dense(3)(mix(masked))
        model = keras.Model(inputs, output)
        layers = random_layers()
        for t in layers:
            t[~padding_mask()] = 0.0
        self.run_model_saving_test(model, layers)

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="`num_layers`.*got 0"):
            ScalarMix(0)
        with pytest.raises(ValueError, match="`num_layers`.*got 2.5"):
            ScalarMix(2.5)
        with pytest.raises(
            ValueError, match="`scalar_mix_parameters`.*num_layers=3, got 2"
        ):
            ScalarMix(3, scalar_mix_parameters=[1.0, 2.0])
        with pytest.raises(
            ValueError, match="`initial_scalar_parameters`.*num_layers=3"
        ):
            ScalarMix(3, initial_scalar_parameters=[1.0])
        with pytest.raises(ValueError, match="mutually exclusive"):
            ScalarMix(
                2,
                scalar_mix_parameters=[1.0, 2.0],
                initial_scalar_parameters=[0.0, 0.0],
            )
        with pytest.raises(ValueError, match="`l2_coef`.*got -1"):
            ScalarMix(2, l2_coef=-1.0)

    def test_wrong_number_of_inputs(self):
        with pytest.raises(ValueError, match="num_layers=3 tensors, got 2"):
            ScalarMix(3)(random_layers(num_layers=2))
        with pytest.raises(ValueError, match="num_layers=3 on axis 1"):
            ScalarMix(3)(np.zeros((B, 2, T, D), "float32"))
        with pytest.raises(ValueError, match="stacked tensor"):
            ScalarMix(3)(np.zeros((B, D), "float32"))
