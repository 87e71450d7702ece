"""Word-sense nearest neighbours (the demo's paper-Table-4 check)."""

import io

import numpy as np

import keras_elmo
from keras_elmo.training import word_sense


def test_nearest_same_word_searches_only_other_occurrences_of_the_word():
    vectors = np.array(
        [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [1.0, 0.01], [0.1, 1.0]]
    )
    words = ["a", "a", "a", "b", "b"]
    # Row 0's most similar row overall is 3 ("b"), which is not allowed.
    np.testing.assert_array_equal(
        word_sense.nearest_same_word(vectors, words), [1, 0, 1, 4, 3]
    )


def test_chance_agreement_counts_same_sense_share_of_other_occurrences():
    pool = [
        ("w", "x", "w one"),
        ("w", "x", "w two"),
        ("w", "y", "w three"),
        ("v", "x", "v one"),
        ("v", "y", "v two"),
    ]
    # w: each x has 1 of 2 others same; y has 0 of 2; v: 0 of 1 each.
    expected = np.mean([1 / 2, 1 / 2, 0.0, 0.0, 0.0])
    assert word_sense.chance_agreement(pool) == expected


def test_pool_words_occur_in_their_sentences():
    for word, _, sentence in word_sense.SENSE_POOL:
        assert word in sentence.split()


def test_shipped_model_separates_senses_better_than_chance():
    bilm = keras_elmo.BiLM.from_preset("elmo_small_en")
    results = word_sense.sense_agreement(bilm)
    chance = word_sense.chance_agreement()
    for layer in ("lstm_outputs1", "lstm_outputs2"):
        assert results[layer][0] > chance + 0.2, (layer, results[layer][0])
    out = io.StringIO()
    word_sense.write_report(bilm, out)
    assert "Nearest neighbour has the same sense" in out.getvalue()
