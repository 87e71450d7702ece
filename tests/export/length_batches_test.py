"""Length-ordered batching: which lists share a call, and the output order."""

import numpy as np

from keras_elmo.export.length_batches import embed_in_length_order


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
