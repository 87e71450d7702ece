"""`UniqueTokens` / `GatherUniqueTokens`: each distinct token embedded once."""

import keras
import numpy as np

import keras_elmo
from keras_elmo.layers.token_sequence import GatherUniqueTokens
from keras_elmo.layers.token_sequence import UniqueTokens
from keras_elmo.testing import TestCase
from keras_elmo.text.char_vocab import batch_to_ids

SENTENCES = [
    ["the", "cat", "and", "the", "dog"],
    ["the", "dog", "."],
    ["a", "cat", "!", "the", "the", "the"],
]


class UniqueTokensTest(TestCase):
    def test_rows_are_distinct_and_inverse_rebuilds_the_batch(self):
        ids = batch_to_ids(SENTENCES)  # [3, 6, 50], with padding rows
        unique, inverse = UniqueTokens()(ids)
        unique, inverse = np.asarray(unique), np.asarray(inverse)
        self.assertEqual(unique.shape[1:], (1, 50))
        self.assertEqual(inverse.shape, (3, 6))
        np.testing.assert_array_equal(unique[inverse, 0], ids)
        # One all-zero row first, then each distinct token once:
        # the, cat, and, dog, ., a, !  (7 words).
        self.assertFalse(unique[0].any())
        self.assertEqual(len(unique), 1 + 7)
        self.assertEqual(len({r.tobytes() for r in unique}), len(unique))

    def test_empty_batch(self):
        unique, inverse = UniqueTokens()(np.zeros((0, 4, 50), "int32"))
        self.assertEqual(tuple(unique.shape), (1, 1, 50))
        self.assertEqual(tuple(inverse.shape), (0, 4))

    def test_gather_maps_values_back(self):
        values = np.arange(12, dtype="float32").reshape(4, 1, 3)
        inverse = np.array([[3, 0], [1, 1]], "int32")
        got = GatherUniqueTokens()(values, inverse)
        np.testing.assert_array_equal(got, values[inverse, 0])


class BiLMDeduplicationTest(TestCase):
    def test_bilm_equals_embedding_every_token(self):
        keras.utils.set_random_seed(0)
        bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
        ids = batch_to_ids(SENTENCES)
        got = bilm(ids)
        add_boundaries = bilm.get_layer("add_sentence_boundaries")
        every = bilm.embed_tokens(add_boundaries(ids))
        want = bilm.contextualize(every, np.asarray(got["mask"]))
        for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
            self.assertAllClose(got[key], want[key], atol=1e-6, rtol=1e-6)
        # Repeated tokens get identical vectors in layer 0.
        word_emb = np.asarray(got["word_emb"])
        np.testing.assert_array_equal(word_emb[0, 0], word_emb[2, 5])
