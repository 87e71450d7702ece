"""`BilmTfReplay` (bilm-tf's own op order) against the stateful BiLM.

Both compute the same function; they differ only in float32 rounding
(the replay concatenates `[x, h]` before one matmul and adds the forget
bias at run time, as TF1's LSTMCell does; the BiLM hoists `x W` out of
the loop with the forget bias folded into `b`). Equality with simple_elmo
itself: `bilm_warmup_test.py` (committed fixture, made on another CPU)
and, bit for bit on one machine, benchmarks/simple_elmo_side_by_side.py.
"""

import dataclasses

import numpy as np
import pytest

import keras_elmo
from keras_elmo.compat import simple_elmo
from tests.models import simple_elmo_fixture as fixture

TOLERANCE = 1e-5  # relative: max |diff| / max |reference|


@pytest.fixture(scope="module", params=["tiny", "tiny_tanh", "small"])
def stateful(request, reference_weights):
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights(request.param))
    return simple_elmo.stateful_copy(bilm)


def _batches(sizes):
    sentences = fixture.sentences()["vector_sentences"]
    out, start = [], 0
    for size in sizes:
        out.append(
            [sentences[(start + i) % len(sentences)] for i in range(size)]
        )
        start += size
    return out


def _through_the_bilm(bilm, batches, warmup):
    """The stateful BiLM's own outputs for the same sequence of calls."""
    bilm.reset_states()
    run = simple_elmo._stateful_runner(bilm)
    run(warmup)
    return [run(batch) for batch in batches]


def _through_the_replay(bilm, batches, warmup, rows):
    replay = simple_elmo.BilmTfReplay(bilm, max_batch_size=rows)
    add = bilm.get_layer("add_sentence_boundaries")
    outputs = []
    for batch in [warmup] + batches:
        outputs.append(replay(add(keras_elmo.batch_to_ids(batch))))
    return replay, outputs[1:]


def _relative(a, b):
    return fixture.relative_error(a, b)


# Batches of 4, 2, 4 rows: the third batch's rows 2-3 start from the
# states the first batch left there (rows a smaller batch does not touch
# keep theirs, as in bilm-tf's state variables).
SIZES = (4, 2, 4)


def test_replay_equals_the_stateful_bilm_batch_after_batch(stateful):
    batches = _batches(SIZES)
    warmup = batches[0]
    expected = _through_the_bilm(stateful, batches, warmup)
    replay, got = _through_the_replay(stateful, batches, warmup, rows=4)
    for batch, out, (embeddings, layers) in zip(batches, expected, got):
        mask = out["mask"]
        assert embeddings.shape[1] == mask.shape[1] + 2
        x = embeddings[:, 1:-1] * mask[..., None]
        assert _relative(x, out["word_emb"]) <= TOLERANCE
        for k, layer in enumerate(layers, start=1):
            mine = layer[:, 1:-1] * mask[..., None]
            assert _relative(mine, out[f"lstm_outputs{k}"]) <= TOLERANCE, k
    carried = stateful._carried
    assert replay.h.shape == carried.h.shape
    assert _relative(replay.h, carried.h) <= TOLERANCE
    assert _relative(replay.c, carried.c) <= TOLERANCE


def test_run_batches_goes_through_the_replay_and_hands_on_its_states(
    stateful, monkeypatch
):
    calls = []
    original = simple_elmo.BilmTfReplay.__call__

    def counting(self, char_ids):
        calls.append(int(char_ids.shape[0]))
        return original(self, char_ids)

    monkeypatch.setattr(simple_elmo.BilmTfReplay, "__call__", counting)
    batches = _batches(SIZES)
    outputs = simple_elmo.run_batches(stateful, batches, warmup=True)
    assert calls == [4, 4, 2, 4]  # the warm-up batch, then every batch
    _, replayed = _through_the_replay(stateful, batches, batches[0], rows=4)
    for out, (embeddings, layers) in zip(outputs, replayed):
        mask = out["mask"]
        np.testing.assert_array_equal(
            out["lstm_outputs2"], layers[1][:, 1:-1] * mask[..., None]
        )
    # The BiLM carries on from the replay's final states.
    after = [["one", "more", "sentence"]]
    replay, _ = _through_the_replay(stateful, batches, batches[0], rows=4)
    add = stateful.get_layer("add_sentence_boundaries")
    _, expected = replay(add(keras_elmo.batch_to_ids(after)))
    got = stateful(keras_elmo.batch_to_ids(after))
    mine = np.asarray(got["lstm_outputs2"])
    assert _relative(mine, expected[1][:, 1:-1]) <= TOLERANCE


def test_supports_only_what_bilm_tf_computes():
    config = keras_elmo.BiLMConfig.from_architecture("tiny")
    assert simple_elmo.supports(config)
    unprojected = dataclasses.replace(config, lstm_units=config.projection_dim)
    assert not simple_elmo.supports(unprojected)


def test_an_unsupported_biLM_falls_back_to_its_own_stateful_path(
    reference_weights, monkeypatch
):
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    stateful = simple_elmo.stateful_copy(bilm)
    monkeypatch.setattr(simple_elmo, "supports", lambda config: False)
    batches = _batches(SIZES)
    outputs = simple_elmo.run_batches(stateful, batches, warmup=True)
    expected = _through_the_bilm(stateful, batches, batches[0])
    for out, ref in zip(outputs, expected):
        np.testing.assert_array_equal(
            out["lstm_outputs2"], ref["lstm_outputs2"]
        )


def test_refuses_what_it_cannot_run(reference_weights):
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    replay = simple_elmo.BilmTfReplay(bilm, max_batch_size=2)
    ids = keras_elmo.batch_to_ids([["a"], ["b"], ["c"]])
    add = bilm.get_layer("add_sentence_boundaries")
    with pytest.raises(ValueError, match="max_batch_size=2 rows, got 3"):
        replay(add(ids))
    unprojected = keras_elmo.BiLM(
        dataclasses.replace(bilm.config, lstm_units=bilm.config.projection_dim)
    )
    with pytest.raises(ValueError, match="projection_dim < lstm_units"):
        simple_elmo.BilmTfReplay(unprojected, max_batch_size=2)


def test_run_batches_reuses_one_replay_per_bilm_and_row_count(
    reference_weights, monkeypatch
):
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    stateful = simple_elmo.stateful_copy(bilm)
    built = []
    original = simple_elmo.BilmTfReplay.__init__

    def counting(self, bilm, max_batch_size):
        built.append(max_batch_size)
        original(self, bilm, max_batch_size)

    monkeypatch.setattr(simple_elmo.BilmTfReplay, "__init__", counting)
    batches = _batches(SIZES)
    first = simple_elmo.run_batches(stateful, batches, warmup=True)
    again = simple_elmo.run_batches(stateful, batches, warmup=True)
    assert built == [4]  # traced once, reused from zero states
    for a, b in zip(first, again):
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    simple_elmo.run_batches(stateful, _batches((2, 2)), warmup=True)
    assert built == [4, 2]  # other rows: other state variables


def test_many_replays_trace_once_each_without_retracing_warnings(
    reference_weights, caplog
):
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    add = bilm.get_layer("add_sentence_boundaries")
    batches = [_batches((n,))[0] for n in (1, 3, 2)]
    with caplog.at_level("WARNING"):
        for _ in range(3):
            replay = simple_elmo.BilmTfReplay(bilm, max_batch_size=3)
            for batch in batches:
                replay(add(keras_elmo.batch_to_ids(batch)))
    assert "retracing" not in caplog.text


def test_the_replay_cache_does_not_keep_a_bilm_alive(reference_weights):
    import gc
    import weakref

    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    stateful = simple_elmo.stateful_copy(bilm)
    simple_elmo.run_batches(stateful, _batches(SIZES), warmup=True)
    assert stateful in simple_elmo._replays
    alive = weakref.ref(stateful)
    del stateful
    gc.collect()
    assert alive() is None
