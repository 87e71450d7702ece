"""Test helpers: `TestCase`, shared checks for keras_elmo layers and models
with keras-hub-style `run_*_test` harnesses.
"""

import json
import os
import shutil
import tempfile
import unittest

import keras
import numpy as np
from keras import ops
from keras import tree


def _to_numpy(x):
    if isinstance(x, keras.Variable):
        # `convert_to_numpy` on a variable warns under NumPy 2.
        return np.asarray(x.numpy())
    return np.asarray(ops.convert_to_numpy(x))


def _flatten(x):
    """Flattens a nested structure; a flat list of numbers is one array."""
    if isinstance(x, (list, tuple)) and all(
        isinstance(v, (int, float)) for v in x
    ):
        return [np.asarray(x)]
    return tree.flatten(x)


def _is_float(x):
    return "float" in keras.backend.standardize_dtype(x.dtype)


def _shape_of(x):
    return tuple(x.shape)


class TestCase(unittest.TestCase):
    """A `unittest.TestCase` with the layer checks of the keras-hub harness.

    Usable from pytest like any `unittest.TestCase`. Tensors in assertions
    may be NumPy arrays, backend tensors, variables or nested structures of
    them; a flat list of Python numbers counts as one array.
    """

    def get_temp_dir(self):
        """Returns a new temporary directory, removed after the test."""
        path = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, path, ignore_errors=True)
        return path

    def assertAllClose(self, a, b, atol=1e-6, rtol=1e-6, msg=None):
        """Asserts two (nested) tensors are element-wise close."""
        flat_a, flat_b = _flatten(a), _flatten(b)
        self.assertEqual(len(flat_a), len(flat_b), msg)
        for x, y in zip(flat_a, flat_b):
            np.testing.assert_allclose(
                _to_numpy(x),
                _to_numpy(y),
                atol=atol,
                rtol=rtol,
                err_msg=msg or "",
            )

    def assertAllEqual(self, a, b, msg=None):
        """Asserts two (nested) tensors have equal shapes and values."""
        flat_a, flat_b = _flatten(a), _flatten(b)
        self.assertEqual(len(flat_a), len(flat_b), msg)
        for x, y in zip(flat_a, flat_b):
            np.testing.assert_array_equal(
                _to_numpy(x), _to_numpy(y), err_msg=msg or ""
            )

    def assertShapeEqual(self, actual, expected, msg=None):
        """Asserts a (nested) shape equals `expected`, comparing tuples."""
        actual = tree.map_shape_structure(tuple, actual)
        expected = tree.map_shape_structure(tuple, expected)
        self.assertEqual(actual, expected, msg)

    def run_layer_test(
        self,
        cls,
        init_kwargs,
        input_data,
        expected_output_shape,
        expected_num_trainable_weights=None,
        expected_num_non_trainable_weights=None,
        expected_output_dtype=None,
        run_training_check=True,
        run_mixed_precision_check=False,
    ):
        """Runs the standard checks on a layer class.

        Checks the config round trip (JSON-serializable), `build`, a
        symbolic call on `keras.Input`s, an eager call, that
        `compute_output_shape` agrees, the weight counts, the output dtype,
        optionally one `fit` step of a tiny functional model (only when the
        layer has trainable weights and all inputs are float) and optionally
        a `mixed_float16` call.

        Args:
            cls: the layer class.
            init_kwargs: dict. Constructor arguments.
            input_data: a tensor, a list of tensors or a dict of tensors.
            expected_output_shape: tuple (or nested tuples) with the batch.
            expected_num_trainable_weights: int or None (not checked).
            expected_num_non_trainable_weights: int or None (not checked).
            expected_output_dtype: str or None (not checked).
            run_training_check: bool. Whether to run one `fit` step.
            run_mixed_precision_check: bool. Whether to check fp16 compute.
        """
        input_shapes = tree.map_structure(_shape_of, input_data)

        # Config round trip.
        layer = cls(**init_kwargs)
        config = layer.get_config()
        for key in init_kwargs:
            self.assertIn(key, config, f"`get_config` lacks `{key}`.")
        json.dumps(keras.saving.serialize_keras_object(layer))
        revived = cls.from_config(config)
        self.assertEqual(revived.get_config(), config)

        # Build.
        layer = cls(**init_kwargs)
        layer.build(input_shapes)
        self.assertTrue(layer.built)

        def check_weights(layer):
            if expected_num_trainable_weights is not None:
                self.assertLen(
                    layer.trainable_weights, expected_num_trainable_weights
                )
            if expected_num_non_trainable_weights is not None:
                self.assertLen(
                    layer.non_trainable_weights,
                    expected_num_non_trainable_weights,
                )

        def check_outputs(outputs):
            self.assertShapeEqual(
                tree.map_structure(_shape_of, outputs), expected_output_shape
            )
            if expected_output_dtype is not None:
                for output in tree.flatten(outputs):
                    self.assertEqual(
                        keras.backend.standardize_dtype(output.dtype),
                        expected_output_dtype,
                    )

        check_weights(layer)

        # Symbolic call.
        symbolic_inputs = tree.map_structure(
            lambda x: keras.Input(batch_shape=x.shape, dtype=x.dtype),
            input_data,
        )
        layer = cls(**init_kwargs)
        check_outputs(layer(symbolic_inputs))
        check_weights(layer)

        # Eager call and `compute_output_shape`.
        layer = cls(**init_kwargs)
        check_outputs(layer(input_data))
        check_weights(layer)
        self.assertShapeEqual(
            layer.compute_output_shape(input_shapes), expected_output_shape
        )

        if run_training_check:
            self._run_training_check(cls, init_kwargs, input_data)
        if run_mixed_precision_check:
            self._run_mixed_precision_check(cls, init_kwargs, input_data)

    def _run_training_check(self, cls, init_kwargs, input_data):
        if not all(_is_float(x) for x in tree.flatten(input_data)):
            return
        layer = cls(**init_kwargs)
        inputs = tree.map_structure(
            lambda x: keras.Input(shape=x.shape[1:], dtype=x.dtype),
            input_data,
        )
        outputs = layer(inputs)
        if not layer.trainable_weights:
            return
        model = keras.Model(inputs, outputs)
        targets = tree.map_structure(
            lambda y: np.zeros(tuple(y.shape), "float32"), model(input_data)
        )
        model.compile(optimizer="sgd", loss="mse")
        history = model.fit(input_data, targets, epochs=1, verbose=0)
        self.assertTrue(np.isfinite(history.history["loss"][-1]))

    def _run_mixed_precision_check(
        self, cls, init_kwargs, input_data, policy="mixed_float16"
    ):
        """Float outputs in the policy's compute dtype, weights float32."""
        layer = cls(**{**init_kwargs, "dtype": policy})
        outputs = layer(input_data)
        for output in tree.flatten(outputs):
            if _is_float(output):
                self.assertEqual(
                    keras.backend.standardize_dtype(output.dtype),
                    policy[len("mixed_") :],
                )
        for weight in layer.weights:
            self.assertEqual(
                keras.backend.standardize_dtype(weight.dtype), "float32"
            )

    def run_backbone_test(
        self,
        cls,
        init_kwargs,
        input_data,
        expected_output_shape,
        variable_length_data=(),
        run_mixed_precision_check=True,
    ):
        """Runs the standard checks on a backbone (a functional model).

        As keras-hub's `run_backbone_test`: the config round trip with the
        same outputs (`run_serialization_test`), an eager call with the
        expected output shapes, `predict` (compiled, batched) giving the
        eager outputs, calls on inputs of other batch sizes and lengths,
        and optionally the `mixed_bfloat16` policy (float32 weights,
        bfloat16 float outputs).

        Args:
            cls: the model class.
            init_kwargs: dict. Constructor arguments.
            input_data: the inputs of one call.
            expected_output_shape: the (nested) output shapes.
            variable_length_data: inputs `[B, T, ...]` of other batch sizes
                and lengths; each output must be `(B, T)` then the
                feature dims of `expected_output_shape`.
            run_mixed_precision_check: bool.
        """
        backbone = cls(**init_kwargs)
        self.run_serialization_test(backbone, input_data)
        outputs = backbone(input_data)
        self.assertShapeEqual(
            tree.map_structure(_shape_of, outputs), expected_output_shape
        )
        self.assertAllClose(
            backbone.predict(input_data, verbose=0), outputs, atol=1e-6
        )
        for data in variable_length_data:
            # Sequence outputs: `(B, T)` of the inputs, then the features.
            expected = tree.map_shape_structure(
                lambda shape: tuple(data.shape[:2]) + tuple(shape[2:]),
                expected_output_shape,
            )
            self.assertShapeEqual(
                tree.map_structure(_shape_of, backbone(data)), expected
            )
        if run_mixed_precision_check:
            self._run_mixed_precision_check(
                cls, init_kwargs, input_data, "mixed_bfloat16"
            )

    def run_serialization_test(self, instance, input_data=None):
        """Checks that a config round trip rebuilds the same object.

        The revived object must give an equal config, survive the
        `serialize_keras_object` JSON round trip and, when `input_data` is
        given, compute identical outputs once it holds the same weights.

        Args:
            instance: a layer or model.
            input_data: optional inputs to compare outputs on.
        """
        cls = instance.__class__
        config = instance.get_config()
        revived = cls.from_config(config)
        self.assertEqual(revived.get_config(), config)

        serialized = json.dumps(keras.saving.serialize_keras_object(instance))
        deserialized = keras.saving.deserialize_keras_object(
            json.loads(serialized)
        )
        self.assertIsInstance(deserialized, cls)
        self.assertEqual(deserialized.get_config(), config)

        if input_data is not None:
            expected = instance(input_data)
            revived(input_data)
            revived.set_weights(instance.get_weights())
            self.assertAllClose(revived(input_data), expected, atol=0, rtol=0)

    def run_model_saving_test(self, model, input_data, tmp_dir=None):
        """Saves `model` to `.keras` and checks the reload predicts alike.

        The file is reloaded with `safe_mode=True`, so every custom object
        must be registered and no Lambda layer may be used.

        Args:
            model: a `keras.Model`.
            input_data: inputs the model accepts.
            tmp_dir: str or None. Folder for the file; a fresh temporary
                one when `None`.
        """
        tmp_dir = tmp_dir or self.get_temp_dir()
        path = os.path.join(str(tmp_dir), "model.keras")
        expected = model(input_data, training=False)
        model.save(path)
        restored = keras.saving.load_model(path, safe_mode=True)
        self.assertIsInstance(restored, model.__class__)
        actual = restored(input_data, training=False)
        self.assertAllClose(actual, expected, atol=0, rtol=0)

    def assertLen(self, container, expected_len, msg=None):
        """Asserts `len(container) == expected_len`."""
        self.assertEqual(len(container), expected_len, msg)
