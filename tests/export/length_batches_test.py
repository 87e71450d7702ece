"""Length-ordered batching: which lists share a call, and the output order."""

import numpy as np

from keras_elmo.embedding.batching import embed_in_length_order
from keras_elmo.embedding.batching import length_order_batches


def _recording_embed(calls):
    def embed(batch):
        calls.append([len(tokens) for tokens in batch])
        # One array per list: its tokens' lengths, so each result is
        # traceable to its list.
        return [np.array([len(t) for t in tokens], float) for tokens in batch]

    return embed


def test_batches_follow_length_order_and_results_input_order():
    lists = [["aaa"] * 3, ["b"], ["cc"] * 2, [], ["d"] * 3, ["e"]]
    calls = []
    out = embed_in_length_order(_recording_embed(calls), lists, 2)
    # Stable sort by token count: lengths 0, 1, 1, 2, 3, 3.
    assert calls == [[0, 1], [1, 2], [3, 3]]
    assert [len(a) for a in out] == [3, 1, 2, 0, 3, 1]
    np.testing.assert_array_equal(out[2], [2.0, 2.0])


def test_each_applies_per_result_and_sort_false_keeps_input_order():
    lists = [["aaa"] * 3, ["b"], ["cc"] * 2]
    calls = []
    out = embed_in_length_order(
        _recording_embed(calls), lists, 2, each=len, sort=False
    )
    assert calls == [[3, 1], [2]]
    assert out == [3, 1, 2]
    assert embed_in_length_order(_recording_embed([]), [], 4) == []


def test_the_cutter_without_a_budget_slices_the_sorted_order():
    lengths = [4, 0, 7, 1, 1, 9, 2]
    batches = length_order_batches(lengths, 3)
    # Stable by length: indices 1 (0), 3 (1), 4 (1), 6 (2), 0 (4), 2 (7), 5 (9).
    assert batches == [[1, 3, 4], [6, 0, 2], [5]]
    assert length_order_batches(lengths, 3, sort=False) == [
        [0, 1, 2],
        [3, 4, 5],
        [6],
    ]
    assert length_order_batches([], 3) == []


def test_the_cutter_keeps_the_padded_budget_and_lets_a_long_list_alone():
    lengths = [3, 3, 3, 8, 2, 12]
    batches = length_order_batches(lengths, 10, batch_tokens=9)
    # 2 3 3 (3 * 3 = 9) | 3 (a fourth 3 would be 12 > 9; 3 and 8: 16) | 8 | 12
    assert [[lengths[i] for i in b] for b in batches] == [
        [2, 3, 3],
        [3],
        [8],
        [12],
    ]
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 9 or len(b) == 1
