import keras
import numpy as np
import tensorflow as tf

from keras_elmo.layers.char_cnn_embedding import CharCNNEmbedding
from keras_elmo.layers.token_ids import CharacterIds
from keras_elmo.testing import TestCase
from keras_elmo.text.char_vocab import batch_to_ids
from tests.conftest import padded

BOW, EOW, PAD = 259, 260, 261

SENTENCES = [
    ["Hello", "w\u00f6rld", "!"],
    ["\U0001f389\U0001f389", "\u6211\u7231", "x" * 63, "a" + "\u00e9" * 31],
    ["\u2764\ufe0f", "<S>"],
    ["\U0001f468\u200d\U0001f469\u200d\U0001f467", "</S>", "y" * 48, "z"],
]


class CharacterIdsTest(TestCase):
    def test_layer_behaviors(self):
        self.run_layer_test(
            cls=CharacterIds,
            init_kwargs={},
            input_data=tf.constant(padded(SENTENCES)),
            expected_output_shape=(4, 4, 50),
            expected_num_trainable_weights=0,
            expected_num_non_trainable_weights=0,
            expected_output_dtype="int32",
        )

    def test_equals_batch_to_ids(self):
        ids = CharacterIds()(tf.constant(padded(SENTENCES)))
        expected = batch_to_ids(SENTENCES)
        self.assertEqual(ids.dtype, tf.int32)
        self.assertAllEqual(ids, expected)
        # The "" padding really gives all-zero rows.
        self.assertAllEqual(ids[2, 2:], np.zeros((2, 50), "int32"))
        self.assertEqual(int(ids[0, 0, 49]), PAD)
        self.assertEqual(int(ids[1, 2, 49]), EOW)

    def test_inside_tf_function(self):
        layer = CharacterIds()

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.string)])
        def fn(tokens):
            return layer(tokens)

        self.assertAllEqual(
            fn(tf.constant(padded(SENTENCES))), batch_to_ids(SENTENCES)
        )
        short = [["a", ""], ["bc", "d"]]
        self.assertAllEqual(
            fn(tf.constant(short)), batch_to_ids([["a"], ["bc", "d"]])
        )

    def test_functional_model_from_string_input(self):
        tokens = keras.Input(shape=(None,), dtype="string")
        ids = CharacterIds()(tokens)
        self.assertEqual(tuple(ids.shape), (None, None, 50))
        self.assertEqual(keras.backend.standardize_dtype(ids.dtype), "int32")
        model = keras.Model(tokens, ids)
        self.assertAllEqual(
            model(tf.constant(padded(SENTENCES))), batch_to_ids(SENTENCES)
        )

    def test_functional_model_saving(self):
        tokens = keras.Input(shape=(None,), dtype="string")
        features = CharCNNEmbedding(
            filters=[(1, 4), (2, 4)], char_embedding_dim=4
        )(CharacterIds()(tokens))
        model = keras.Model(tokens, features)
        self.run_model_saving_test(model, tf.constant(padded(SENTENCES)))

    def test_config_round_trip(self):
        layer = CharacterIds(name="char_ids")
        config = layer.get_config()
        self.assertEqual(config["name"], "char_ids")
        self.run_serialization_test(
            layer, input_data=tf.constant(padded(SENTENCES))
        )

    def test_nul_byte_inside_token(self):
        ids = CharacterIds()(tf.constant([["a\x00b"]]))
        self.assertEqual(
            ids[0, 0].numpy().tolist(), [BOW, 98, 1, 99, EOW] + [PAD] * 45
        )
        self.assertAllEqual(ids, batch_to_ids([["a\x00b"]]))

    def test_invalid_utf8_bytes_are_raw_bytes(self):
        tokens = tf.constant([[b"\xff\xfe", b"ok", b"\xc3"]])
        ids = CharacterIds()(tokens).numpy()
        self.assertEqual(ids[0, 0, :4].tolist(), [BOW, 256, 255, EOW])
        self.assertEqual(ids[0, 0, 4:].tolist(), [PAD] * 46)
        self.assertEqual(ids[0, 1, :4].tolist(), [BOW, 112, 108, EOW])
        # A lone lead byte of a multi-byte character.
        self.assertEqual(ids[0, 2, :3].tolist(), [BOW, 0xC3 + 1, EOW])
        # 60 invalid bytes: kept as is, cut at 48.
        ids = CharacterIds()(tf.constant([[b"\x80" * 60]])).numpy()
        self.assertEqual(ids[0, 0, 1:49].tolist(), [0x81] * 48)
        self.assertEqual(ids[0, 0, 49], EOW)

    def test_higher_rank_tokens(self):
        tokens = tf.constant([[["Hello", ""], ["a", "b"]]])
        ids = CharacterIds()(tokens)
        self.assertEqual(tuple(ids.shape), (1, 2, 2, 50))
        self.assertAllEqual(ids[0], batch_to_ids([["Hello"], ["a", "b"]]))

    def test_text_forms_give_the_same_ids(self):
        # ElmoLayer's forms: ragged tokens, sentences [B] (split like
        # str.split(), Unicode whitespace included), padded tokens, and
        # Python or NumPy strings, padded in NumPy.
        sentences = ["a fine\u00a0 film", "  dull\u2003", ""]
        expected = batch_to_ids([s.split() for s in sentences])
        self.assertEqual(expected.shape, (3, 3, 50))
        layer = CharacterIds()
        forms = {
            "ragged": tf.strings.split(
                tf.constant(["a fine film", "dull", ""])
            ),
            "sentences": tf.constant(sentences),
            "padded": tf.constant(
                [["a", "fine", "film"], ["dull", "", ""], ["", "", ""]]
            ),
            "python sentences": sentences,
            "numpy sentences": np.array(sentences),
            "token lists": [["a", "fine", "film"], ["dull"], []],
        }
        for name, tokens in forms.items():
            with self.subTest(name):
                ids = layer(tokens)
                self.assertEqual(ids.dtype, tf.int32)
                self.assertAllEqual(ids, expected)

    def test_text_forms_in_functional_models(self):
        sentences = ["Hello w\u00f6rld !", "\u6211\u7231", "x"]
        expected = batch_to_ids([s.split() for s in sentences])
        ragged = keras.Input(shape=(None,), dtype="string", ragged=True)
        model = keras.Model(ragged, CharacterIds()(ragged))
        self.assertEqual(tuple(model.output.shape), (None, None, 50))
        self.assertAllEqual(model(tf.strings.split(sentences)), expected)
        text = keras.Input(shape=(), dtype="string")
        model = keras.Model(text, CharacterIds()(text))
        self.assertEqual(tuple(model.output.shape), (None, None, 50))
        self.assertAllEqual(
            model.predict(tf.constant(sentences), verbose=0), expected
        )

    def test_same_tokens_as_elmo_layer(self):
        # One rule for both layers: ElmoLayer on sentences gives exactly
        # its vectors on the ids CharacterIds makes of the same sentences.
        import keras_elmo

        keras.utils.set_random_seed(0)
        bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
        elmo = keras_elmo.ElmoLayer(bilm)
        sentences = tf.constant(["a\u3000b  c", "d\te", ""])
        ids = CharacterIds()(sentences)
        self.assertEqual(tuple(ids.shape), (3, 3, 50))
        self.assertAllEqual(elmo(sentences), elmo(ids))

    def test_ragged_of_another_rank_is_refused(self):
        tokens = tf.ragged.constant([[["a"], ["b", "c"]]])
        with self.assertRaisesRegex(ValueError, r"`tokens`.*\[B, \(n\)\]"):
            CharacterIds()(tokens)

    def test_compute_output_shape(self):
        layer = CharacterIds()
        self.assertEqual(layer.compute_output_shape((None, 7)), (None, 7, 50))
        self.assertEqual(layer.compute_output_shape((2, None)), (2, None, 50))
        self.assertEqual(layer.compute_output_shape((4,)), (4, None, 50))
