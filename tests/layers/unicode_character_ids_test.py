"""`UnicodeCharacterIds` / `WordIds`: a lexicon's ids, in graph, exactly
as ELMoForManyLangs' batching code (`create_one_batch`) makes them."""

import os

import keras
import numpy as np
import tensorflow as tf

from keras_elmo.layers.token_ids import UnicodeCharacterIds
from keras_elmo.layers.token_ids import WordIds
from keras_elmo.layers.token_sequence import AddWordBoundaries
from keras_elmo.testing import TestCase
from keras_elmo.weights.elmoformanylangs import read_lexicon
from tests import efml_reference as ref

CHARS = read_lexicon(os.path.join(ref.folder("word"), "char.dic"))
WORDS = read_lexicon(os.path.join(ref.folder("word"), "word.dic"))
# The package's batching code swaps the two word markers.
CHAR_SPECIALS = {
    "bow": CHARS["<eow>"],
    "eow": CHARS["<bow>"],
    "oov": CHARS["<oov>"],
    "pad": CHARS["<pad>"],
    "bos": CHARS["<bos>"],
    "eos": CHARS["<eos>"],
}
WORD_SPECIALS = {
    "oov": WORDS["<oov>"],
    "pad": WORDS["<pad>"],
    "bos": WORDS["<bos>"],
    "eos": WORDS["<eos>"],
}


def package_char_ids(sentences, max_chars=50):
    """A NumPy transcription of `read_list` + `create_one_batch` (chars),
    without the <bos>/<eos> words, shifted by +1, "" as padding rows."""
    steps = max(len(s) for s in sentences)
    out = np.zeros((len(sentences), steps, max_chars), np.int32)
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            if len(token) + 2 > max_chars:
                token = token[: max_chars - 2]
            row = np.full([max_chars], CHARS["<pad>"])
            row[0] = CHARS["<eow>"]
            if token in ("<bos>", "<eos>"):
                row[1], row[2] = CHARS[token], CHARS["<bow>"]
            else:
                for k, c in enumerate(token):
                    row[k + 1] = CHARS.get(c, CHARS["<oov>"])
                row[len(token) + 1] = CHARS["<bow>"]
            out[i, j] = row + 1
    return out


def package_word_ids(sentences, max_chars=50):
    steps = max(len(s) for s in sentences)
    out = np.full((len(sentences), steps), WORDS["<pad>"], np.int32)
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            token = token[: max_chars - 2]
            out[i, j] = WORDS.get(token, WORDS["<oov>"])
    return out


def char_layer():
    return UnicodeCharacterIds(list(CHARS.items()), CHAR_SPECIALS)


class UnicodeCharacterIdsTest(TestCase):
    def test_layer_behaviors(self):
        sentences, _, _ = ref.reference("word")
        self.run_layer_test(
            cls=UnicodeCharacterIds,
            init_kwargs={
                "lexicon": list(CHARS.items()),
                "specials": CHAR_SPECIALS,
            },
            input_data=ref.padded(sentences),
            expected_output_shape=(9, 13, 50),
            expected_num_trainable_weights=0,
            expected_num_non_trainable_weights=0,
            expected_output_dtype="int32",
        )

    def test_equals_the_packages_batching(self):
        sentences, _, _ = ref.reference("word")
        ids = char_layer()(ref.padded(sentences))
        self.assertAllEqual(ids, package_char_ids(sentences))
        # Over-long: 48 code points kept (a 4-byte one is one character).
        self.assertEqual(int(ids[4, 0, 49]), CHARS["<bow>"] + 1)
        self.assertEqual(int(ids[4, 0, 48]), CHARS["人"] + 1)
        # "" is padding.
        self.assertAllEqual(ids[7, 1:], np.zeros((12, 50), "int32"))

    def test_ideographic_space_line_and_unknown_whitespace(self):
        ids = char_layer()(tf.constant([["中\u3000国", "x\u00a0y"]]))
        self.assertEqual(int(ids[0, 0, 2]), CHARS["\u3000"] + 1)
        self.assertEqual(int(ids[0, 1, 2]), CHARS["<oov>"] + 1)

    def test_invalid_utf8_is_one_replacement_character(self):
        ids = char_layer()(tf.constant([[b"a\xffb"]]))
        oov = CHARS["<oov>"] + 1
        self.assertAllEqual(
            ids[0, 0, :5],
            [
                CHARS["<eow>"] + 1,
                CHARS["a"] + 1,
                oov,
                CHARS["b"] + 1,
                CHARS["<bow>"] + 1,
            ],
        )

    def test_inside_tf_function_and_saving(self):
        layer = char_layer()

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.string)])
        def fn(tokens):
            return layer(tokens)

        sentences, _, _ = ref.reference("char")
        self.assertAllEqual(
            fn(ref.padded(sentences)), package_char_ids(sentences)
        )
        tokens = keras.Input(shape=(None,), dtype="string")
        model = keras.Model(tokens, char_layer()(tokens))
        self.run_model_saving_test(model, ref.padded(sentences))

    def test_bad_lexicons_name_the_argument(self):
        with self.assertRaisesRegex(ValueError, "`lexicon`.*pairs"):
            UnicodeCharacterIds([("a", "x")], CHAR_SPECIALS)
        with self.assertRaisesRegex(ValueError, "lack \\['eos'\\]"):
            specials = dict(CHAR_SPECIALS)
            del specials["eos"]
            UnicodeCharacterIds(list(CHARS.items()), specials)
        with self.assertRaisesRegex(TypeError, "`tokens`"):
            char_layer()(np.ones((1, 2), "int32"))


class WordIdsTest(TestCase):
    def test_layer_behaviors(self):
        sentences, _, _ = ref.reference("word")
        self.run_layer_test(
            cls=WordIds,
            init_kwargs={
                "lexicon": list(WORDS.items()),
                "specials": WORD_SPECIALS,
            },
            input_data=ref.padded(sentences),
            expected_output_shape=(9, 13),
            expected_num_trainable_weights=0,
            expected_num_non_trainable_weights=0,
            expected_output_dtype="int32",
        )

    def test_equals_the_packages_lookup(self):
        sentences, _, _ = ref.reference("word")
        layer = WordIds(list(WORDS.items()), WORD_SPECIALS)
        ids = layer(ref.padded(sentences))
        self.assertAllEqual(ids, package_word_ids(sentences))
        # "a" * 49 is looked up cut to 48: a known word.
        self.assertEqual(int(ids[4, 2]), WORDS["a" * 48])
        self.assertEqual(int(ids[6, 0]), WORDS["<bos>"])


class AddWordBoundariesTest(TestCase):
    def test_wraps_each_row_at_its_own_length(self):
        layer = AddWordBoundaries(bos_id=7, eos_id=8, pad_id=9)
        words = np.array([[1, 2, 3], [4, 0, 0]], "int32")
        mask = np.array([[True, True, True], [True, False, False]])
        self.assertAllEqual(
            layer(words, token_mask=mask),
            # Positions after `eos` keep their (masked) values.
            np.array([[7, 1, 2, 3, 8], [7, 4, 8, 0, 9]]),
        )
        self.run_serialization_test(layer)
