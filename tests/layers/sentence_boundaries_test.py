import keras
import numpy as np

from keras_elmo.layers.char_cnn_embedding import CharCNNEmbedding
from keras_elmo.layers.token_sequence import AddSentenceBoundaries
from keras_elmo.layers.token_sequence import RemoveSentenceBoundaries
from keras_elmo.layers.token_sequence import TokenMask
from keras_elmo.layers.token_sequence import sequence_lengths
from keras_elmo.testing import TestCase
from keras_elmo.text.char_vocab import batch_to_ids

SENTENCES = [["The", "cat", "sat"], ["Hi"], [], ["a", "b"]]
LENGTHS = [3, 1, 0, 2]
BOS = [259, 257, 260] + [261] * 47
EOS = [259, 258, 260] + [261] * 47


def char_ids():
    return batch_to_ids(SENTENCES)  # [4, 3, 50]


def expected_with_boundaries(ids, lengths):
    batch, steps = ids.shape[:2]
    out = np.zeros((batch, steps + 2, 50), "int32")
    for b, n in enumerate(lengths):
        out[b, 0] = BOS
        out[b, 1 : n + 1] = ids[b, :n]
        out[b, n + 1] = EOS
    return out


class AddSentenceBoundariesTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=AddSentenceBoundaries,
            init_kwargs={},
            input_data=char_ids(),
            expected_output_shape=(4, 5, 50),
            expected_num_trainable_weights=0,
            expected_output_dtype="int32",
        )

    def test_boundary_ids_at_zero_and_length_plus_one(self):
        ids = char_ids()
        out = np.asarray(AddSentenceBoundaries()(ids))
        self.assertEqual(out.shape, (4, 5, 50))
        self.assertAllEqual(out, expected_with_boundaries(ids, LENGTHS))
        for b, n in enumerate(LENGTHS):
            self.assertEqual(out[b, 0].tolist(), BOS)
            self.assertEqual(out[b, n + 1].tolist(), EOS)
            self.assertAllEqual(out[b, 1 : n + 1], ids[b, :n])
            self.assertTrue((out[b, n + 2 :] == 0).all())
        # The empty row becomes <S></S> and padding.
        self.assertEqual(out[2, :2].tolist(), [BOS, EOS])
        self.assertTrue((out[2, 2:] == 0).all())
        # BOS/EOS ids equal batch_to_ids of the literal tokens.
        literal = batch_to_ids([["<S>", "</S>"]])[0]
        self.assertAllEqual(out[0, 0], literal[0])
        self.assertAllEqual(out[0, 4], literal[1])

    def test_int64_and_symbolic_input(self):
        ids = char_ids()
        expected = expected_with_boundaries(ids, LENGTHS)
        self.assertAllEqual(
            AddSentenceBoundaries()(ids.astype("int64")), expected
        )
        inputs = keras.Input(shape=(None, 50), dtype="int32")
        outputs = AddSentenceBoundaries()(inputs)
        self.assertEqual(tuple(outputs.shape), (None, None, 50))
        self.assertEqual(
            keras.backend.standardize_dtype(outputs.dtype), "int32"
        )
        model = keras.Model(inputs, outputs)
        self.assertAllEqual(model(ids), expected)
        self.assertEqual(
            AddSentenceBoundaries().compute_output_shape((2, 7, 50)),
            (2, 9, 50),
        )

    def test_mask_after_boundaries(self):
        out = AddSentenceBoundaries()(char_ids())
        mask = np.asarray(TokenMask()(out))
        self.assertEqual(mask.sum(1).tolist(), [n + 2 for n in LENGTHS])
        self.assertAllEqual(
            mask, np.arange(5)[None, :] < np.array(LENGTHS)[:, None] + 2
        )

    def test_serialization(self):
        self.run_serialization_test(
            AddSentenceBoundaries(name="add"), input_data=char_ids()
        )


class RemoveSentenceBoundariesTest(TestCase):
    def test_layer_behaviors(self):
        # Inputs with boundaries [4, 5, 6] and the boundary-free mask.
        rng = np.random.default_rng(0)
        inputs = rng.normal(size=(4, 5, 6)).astype("float32")
        mask = np.asarray(TokenMask()(char_ids()))
        layer = RemoveSentenceBoundaries()
        out = layer(inputs, mask=mask)
        self.assertEqual(tuple(out.shape), (4, 3, 6))
        self.assertEqual(layer.compute_output_shape((None, 5, 6)), (None, 3, 6))
        self.assertEqual(
            layer.compute_output_shape((None, None, 6)), (None, None, 6)
        )
        self.assertAllEqual(layer.compute_mask(inputs, mask), mask)

    def test_strips_and_zeroes_padding(self):
        rng = np.random.default_rng(1)
        inputs = rng.uniform(1.0, 2.0, size=(4, 5, 6)).astype("float32")
        mask = np.arange(3)[None, :] < np.array(LENGTHS)[:, None]
        out = np.asarray(RemoveSentenceBoundaries()(inputs, mask=mask))
        expected = inputs[:, 1:-1] * mask[..., None]
        self.assertAllClose(out, expected, atol=0, rtol=0)
        for b, n in enumerate(LENGTHS):
            self.assertAllClose(out[b, :n], inputs[b, 1 : n + 1], atol=0)
            self.assertTrue((out[b, n:] == 0).all())
        # The </S> of the short row "Hi" (position 2 with boundaries) lands
        # on stripped position 1, a padding position: it becomes 0.
        self.assertNotEqual(float(inputs[1, 2, 0]), 0.0)
        self.assertTrue((out[1, 1] == 0).all())

    def test_round_trip_with_add(self):
        ids = char_ids()
        mask = TokenMask()(ids)
        added = keras.ops.cast(AddSentenceBoundaries()(ids), "float32")
        out = RemoveSentenceBoundaries()(added, mask=mask)
        self.assertAllEqual(out, ids.astype("float32"))

    def test_functional_pipeline_sets_mask(self):
        ids = char_ids()
        inputs = keras.Input(shape=(None, 50), dtype="int32")
        mask = TokenMask()(inputs)
        with_boundaries = AddSentenceBoundaries()(inputs)
        features = CharCNNEmbedding([(1, 3), (2, 3)], 4)(with_boundaries)
        stripped = RemoveSentenceBoundaries()(features, mask=mask)
        pooled = keras.layers.GlobalAveragePooling1D()(stripped)
        model = keras.Model(inputs, [stripped, features, pooled])
        out, full, pool = (np.asarray(t) for t in model(ids))
        real = (ids > 0).any(-1)
        self.assertEqual(out.shape, (4, 3, 6))
        self.assertAllClose(out, full[:, 1:-1] * real[..., None], atol=0)
        # The pooling sees the boundary-free mask: row 3 averages 2 tokens.
        self.assertAllClose(pool[3], full[3, 1:3].mean(0), atol=1e-6)
        self.assertAllClose(pool[0], full[0, 1:4].mean(0), atol=1e-6)

    def test_serialization(self):
        rng = np.random.default_rng(2)
        inputs = rng.normal(size=(4, 5, 6)).astype("float32")
        layer = RemoveSentenceBoundaries(name="remove")
        config = layer.get_config()
        self.assertEqual(
            RemoveSentenceBoundaries.from_config(config).get_config(), config
        )
        mask = np.asarray(TokenMask()(char_ids()))
        revived = RemoveSentenceBoundaries.from_config(config)
        self.assertAllClose(
            revived(inputs, mask=mask), layer(inputs, mask=mask), atol=0
        )


class TokenMaskTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=TokenMask,
            init_kwargs={},
            input_data=char_ids(),
            expected_output_shape=(4, 3),
            expected_num_trainable_weights=0,
            expected_output_dtype="bool",
        )

    def test_values(self):
        ids = char_ids()
        mask = TokenMask()(ids)
        expected = np.arange(3)[None, :] < np.array(LENGTHS)[:, None]
        self.assertAllEqual(mask, expected)
        self.assertEqual(np.asarray(sequence_lengths(ids)).tolist(), LENGTHS)
        # One positive id anywhere makes a token real; negatives do not.
        partial = np.zeros((1, 3, 50), "int32")
        partial[0, 0, 49] = 1
        partial[0, 2, 0] = -5
        self.assertAllEqual(
            TokenMask()(partial), np.array([[True, False, False]])
        )

    def test_symbolic(self):
        inputs = keras.Input(shape=(None, 50), dtype="int32")
        mask = TokenMask()(inputs)
        self.assertEqual(tuple(mask.shape), (None, None))
        self.assertEqual(keras.backend.standardize_dtype(mask.dtype), "bool")
        self.run_serialization_test(TokenMask(), input_data=char_ids())
