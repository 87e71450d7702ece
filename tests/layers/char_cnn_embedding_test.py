import keras
import numpy as np
import pytest

from keras_elmo.layers.char_cnn_embedding import CharCNNEmbedding
from keras_elmo.testing import TestCase
from keras_elmo.text.char_vocab import batch_to_ids

FILTERS = [(1, 4), (2, 3), (3, 5)]
DIM = 4
SENTENCES = [["Hello", "w\u00f6rld", "x" * 60], ["a", "", "\U0001f389"]]


def char_ids():
    return batch_to_ids(SENTENCES)  # [2, 3, 50], row (1, 1) is padding


def seeded_weights(seed=0, filters=FILTERS, dim=DIM, scale=0.5):
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(261, dim)).astype("float32")
    kernels = [
        (scale * rng.normal(size=(w, dim, n))).astype("float32")
        for w, n in filters
    ]
    biases = [
        (0.1 * rng.normal(size=(n,))).astype("float32") for _, n in filters
    ]
    return table, kernels, biases


def assign(layer, table, kernels, biases):
    layer.char_embeddings.assign(table)
    for variable, value in zip(layer.kernels, kernels):
        variable.assign(value)
    for variable, value in zip(layer.biases, biases):
        variable.assign(value)


def numpy_char_cnn(ids, table, kernels, biases, activation="relu"):
    """Re-derives the char-CNN in float64 with explicit loops."""
    full = np.concatenate([np.zeros((1, table.shape[1])), table], 0)
    chars = full[ids].astype("float64")  # [B, T, 50, dim]
    outputs = []
    for kernel, bias in zip(kernels, biases):
        width = kernel.shape[0]
        positions = chars.shape[2] - width + 1
        conv = np.zeros(chars.shape[:2] + (positions, kernel.shape[2]))
        for t in range(positions):
            for k in range(width):
                conv[:, :, t] += chars[:, :, t + k] @ kernel[k]
        pooled = conv.max(axis=2) + bias
        if activation == "relu":
            outputs.append(np.maximum(pooled, 0.0))
        else:
            outputs.append(np.tanh(pooled))
    return np.concatenate(outputs, axis=-1)


class CharCNNEmbeddingTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=CharCNNEmbedding,
            init_kwargs={"filters": FILTERS, "char_embedding_dim": DIM},
            input_data=char_ids(),
            expected_output_shape=(2, 3, 12),
            expected_num_trainable_weights=1 + 2 * len(FILTERS),
            expected_num_non_trainable_weights=0,
            expected_output_dtype="float32",
            run_mixed_precision_check=True,
        )

    def test_layer_behaviors_tanh(self):
        self.run_layer_test(
            cls=CharCNNEmbedding,
            init_kwargs={
                "filters": [[2, 8]],
                "char_embedding_dim": 16,
                "activation": "tanh",
                "num_characters": 262,
                "embeddings_initializer": "glorot_uniform",
                "bias_initializer": "ones",
            },
            input_data=char_ids(),
            expected_output_shape=(2, 3, 8),
            expected_num_trainable_weights=3,
        )

    def test_matches_numpy(self):
        for activation in ("relu", "tanh"):
            layer = CharCNNEmbedding(FILTERS, DIM, activation=activation)
            ids = char_ids()
            layer.build(ids.shape)
            weights = seeded_weights(seed=1)
            assign(layer, *weights)
            expected = numpy_char_cnn(ids, *weights, activation=activation)
            self.assertAllClose(layer(ids), expected, atol=1e-5, rtol=1e-5)
            # The reference is not degenerate: both signs before relu.
            if activation == "relu":
                self.assertTrue((expected == 0).any())
                self.assertTrue((expected > 0.1).any())

    def test_matches_numpy_via_set_weights(self):
        layer = CharCNNEmbedding(FILTERS, DIM)
        ids = char_ids()
        layer.build(ids.shape)
        table, kernels, biases = seeded_weights(seed=2)
        # Weight order: table, then kernel and bias per filter width.
        values = [table]
        for kernel, bias in zip(kernels, biases):
            values += [kernel, bias]
        layer.set_weights(values)
        expected = numpy_char_cnn(ids, table, kernels, biases)
        self.assertAllClose(layer(ids), expected, atol=1e-5, rtol=1e-5)

    def test_char_table_has_261_rows_and_id_is_row_plus_one(self):
        layer = CharCNNEmbedding([(1, DIM)], DIM, bias_initializer="zeros")
        layer.build((None, None, 50))
        self.assertEqual(tuple(layer.char_embeddings.shape), (261, DIM))
        table = np.arange(261 * DIM, dtype="float32").reshape(261, DIM) + 1
        layer.char_embeddings.assign(table)
        layer.kernels[0].assign(np.eye(DIM, dtype="float32")[None])
        # A token whose 50 slots all hold id k gives row k - 1 of the table.
        ids = np.stack([np.full((50,), k, "int32") for k in (1, 5, 261)])
        out = np.asarray(layer(ids[None]))[0]
        self.assertAllClose(out, table[[0, 4, 260]], atol=0)
        # Id 0 is the implicit zero row: a padding token gives act(bias).
        zero = np.asarray(layer(np.zeros((1, 1, 50), "int32")))
        self.assertAllClose(zero, np.zeros((1, 1, DIM)), atol=0)
        layer.biases[0].assign(np.array([-1.0, 0.5, 2.0, 0.0], "float32"))
        zero = np.asarray(layer(np.zeros((1, 1, 50), "int32")))
        self.assertAllClose(zero[0, 0], [0.0, 0.5, 2.0, 0.0], atol=0)

    def test_zero_ids_inside_a_token_embed_to_zero(self):
        # Slots with id 0 contribute nothing, even with a huge table.
        layer = CharCNNEmbedding([(1, 1)], 1)
        layer.build((None, None, 50))
        layer.char_embeddings.assign(np.full((261, 1), -7.0, "float32"))
        layer.kernels[0].assign(np.full((1, 1, 1), -1.0, "float32"))
        ids = np.zeros((1, 1, 50), "int32")
        ids[0, 0, 3] = 10  # 7.0 at one slot, 0.0 at the others
        self.assertAllClose(layer(ids), np.full((1, 1, 1), 7.0), atol=0)
        layer.kernels[0].assign(np.full((1, 1, 1), 1.0, "float32"))
        self.assertAllClose(layer(ids), np.zeros((1, 1, 1)), atol=0)

    def test_kernels_drawn_independently(self):
        # An unseeded Keras initializer repeats its values on every call.
        layer = CharCNNEmbedding([(2, 4), (2, 4)], DIM)
        layer.build((None, None, 50))
        self.assertFalse(np.allclose(layer.kernels[0], layer.kernels[1]))

    def test_mask_is_any_id_positive(self):
        ids = char_ids()
        layer = CharCNNEmbedding(FILTERS, DIM)
        mask = layer.compute_mask(ids)
        self.assertAllEqual(
            mask, np.array([[True, True, True], [True, False, True]])
        )
        self.assertAllEqual(mask, (ids > 0).any(-1))
        partial = np.zeros((1, 2, 50), "int32")
        partial[0, 1, 49] = 3
        self.assertAllEqual(
            layer.compute_mask(partial), np.array([[False, True]])
        )

    def test_mask_reaches_downstream_layers(self):
        ids = char_ids()
        inputs = keras.Input(shape=(None, 50), dtype="int32")
        cnn = CharCNNEmbedding(FILTERS, DIM)
        features = cnn(inputs)
        pooled = keras.layers.GlobalAveragePooling1D()(features)
        model = keras.Model(inputs, [features, pooled])
        weights = seeded_weights(seed=3)
        assign(cnn, *weights)
        out, pool = model(ids)
        expected = numpy_char_cnn(ids, *weights)
        self.assertAllClose(out, expected, atol=1e-5, rtol=1e-5)
        self.assertAllClose(pool[0], expected[0].mean(0), atol=1e-5)
        # Row 1's padding token (position 1) is left out of the mean.
        self.assertAllClose(pool[1], expected[1, [0, 2]].mean(0), atol=1e-5)
        self.assertFalse(
            np.allclose(expected[1].mean(0), expected[1, [0, 2]].mean(0))
        )

    def test_compute_output_shape(self):
        layer = CharCNNEmbedding(FILTERS, DIM)
        self.assertEqual(
            layer.compute_output_shape((None, None, 50)), (None, None, 12)
        )

    def test_serialization(self):
        layer = CharCNNEmbedding(
            [(1, 2), (3, 4)],
            8,
            activation="tanh",
            num_characters=262,
            embeddings_initializer="he_normal",
            name="cnn",
        )
        self.run_serialization_test(layer, input_data=char_ids())
        self.assertEqual(layer.get_config()["filters"], [[1, 2], [3, 4]])

    def test_model_saving(self):
        inputs = keras.Input(shape=(None, 50), dtype="int32")
        features = CharCNNEmbedding(FILTERS, DIM, activation="tanh")(inputs)
        model = keras.Model(inputs, keras.layers.Dense(2)(features))
        self.run_model_saving_test(model, char_ids())

    def test_invalid_arguments(self):
        with pytest.raises(ValueError, match="`filters`"):
            CharCNNEmbedding([], DIM)
        with pytest.raises(ValueError, match="`filters`"):
            CharCNNEmbedding([(0, 4)], DIM)
        with pytest.raises(ValueError, match="`filters`"):
            CharCNNEmbedding([(1, 2, 3)], DIM)
        with pytest.raises(ValueError, match="`activation`.*'gelu'"):
            CharCNNEmbedding(FILTERS, DIM, activation="gelu")


def _pad_window_wins(ids, table, kernels):
    """(token, filter) pairs whose max lies only in an all-PAD window past
    the batch's longest token: what the skipped windows must still give."""
    full = np.concatenate([np.zeros((1, table.shape[1])), table], 0)
    chars = full[ids.reshape(-1, 50)].astype("float64")
    real = (ids.reshape(-1, 50) > 0) & (ids.reshape(-1, 50) != 261)
    longest = int(real.sum(axis=1).max())
    wins = 0
    for kernel in kernels:
        width = kernel.shape[0]
        conv = np.stack(
            [
                np.einsum("nwd,wdf->nf", chars[:, t : t + width], kernel)
                for t in range(50 - width + 1)
            ],
            axis=1,
        )
        tokens = real.any(axis=1)
        wins += int(
            (
                conv[tokens, longest:].max(1) > conv[tokens, :longest].max(1)
            ).sum()
        )
    return wins


class SkippedPaddingWindowsTest(TestCase):
    """Short tokens only: windows past the longest token are skipped."""

    def test_equals_numpy_over_all_50_slots(self):
        ids = batch_to_ids([["Hi", "there", ""], ["a", "bcd", "efghij"]])
        weights = seeded_weights(seed=3, filters=[(1, 6), (3, 6), (7, 9)])
        # Make the PAD character's row large: its windows win some maxima.
        weights[0][260] = 2.0
        self.assertGreater(_pad_window_wins(ids, weights[0], weights[1]), 0)
        for activation in ("relu", "tanh"):
            layer = CharCNNEmbedding(
                [(1, 6), (3, 6), (7, 9)], DIM, activation=activation
            )
            layer.build(ids.shape)
            assign(layer, *weights)
            expected = numpy_char_cnn(ids, *weights, activation=activation)
            self.assertAllClose(layer(ids), expected, atol=1e-5, rtol=1e-5)

    def test_gradients_equal_the_full_width_ones(self):
        import tensorflow as tf

        short = batch_to_ids([["Hi", "there"], ["a", "bcdefg"]])
        # A 60-byte token fills all 50 slots, so nothing is skipped; its
        # row gets zero weight in the loss.
        full = batch_to_ids([["Hi", "there"], ["a", "bcdefg"], ["x" * 60]])
        weights = seeded_weights(seed=4, filters=[(2, 5), (5, 7)])
        weights[0][260] = 1.5
        layer = CharCNNEmbedding([(2, 5), (5, 7)], DIM, activation="tanh")
        layer.build(short.shape)
        assign(layer, *weights)
        probe = np.random.default_rng(0).normal(size=(2, 2, 12))

        def gradients(ids):
            with tf.GradientTape() as tape:
                out = layer(ids)[:2]
                loss = tf.reduce_sum(tf.sin(out * probe))
            grads = tape.gradient(loss, layer.trainable_variables)
            return [np.asarray(tf.convert_to_tensor(g)) for g in grads]

        for got, want in zip(gradients(short), gradients(full)):
            self.assertAllClose(got, want, atol=1e-5, rtol=1e-5)

    def test_long_and_short_tokens_each_pool_over_their_own_windows(self):
        # Token lengths 45, 46, 47 and 4 slots against widths whose last
        # window starts at 49, 45 and 43: some tokens keep an all-PAD
        # window (and its value joins their max), others do not.
        ids = batch_to_ids(
            [["x" * 43, "y" * 44, "ab"], ["z" * 45, "", "\u00e9"]]
        )
        filters = [(1, 6), (5, 6), (7, 9)]
        weights = seeded_weights(seed=5, filters=filters)
        weights[0][260] = 2.0  # PAD windows win some maxima
        full = np.concatenate([np.zeros((1, DIM)), weights[0]], 0)
        flat = ids.reshape(-1, 50)
        lengths = ((flat > 0) & (flat != 261)).sum(axis=1)
        wins = 0
        for kernel in weights[1]:
            width = kernel.shape[0]
            for row, n in zip(flat, lengths):
                if 0 < n < 50 - width + 1:
                    conv = np.stack(
                        [
                            np.einsum(
                                "wd,wdf->f", full[row[t : t + width]], kernel
                            )
                            for t in range(50 - width + 1)
                        ]
                    )
                    wins += int((conv[n:].max(0) > conv[:n].max(0)).sum())
        self.assertGreater(wins, 0)
        layer = CharCNNEmbedding(filters, DIM)
        layer.build(ids.shape)
        assign(layer, *weights)
        expected = numpy_char_cnn(ids, *weights)
        self.assertAllClose(layer(ids), expected, atol=1e-5, rtol=1e-5)
