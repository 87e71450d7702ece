"""What Beam 2.77 does not offer, which keras_elmo.integrations.beam works
around:
`ModelHandler(max_batch_weight=...)` is passed by RunInference to
`beam.BatchElements`, which has no such argument (docs/BEAM.md,
"Upstream reports"); the handler cuts its model calls itself (by length,
at most `batch_size` sentences and `batch_tokens` padded positions)."""

import apache_beam as beam
import pytest
from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import RunInference

from keras_elmo.embedding.hdf5_output import CHUNK_BATCHES
from keras_elmo.integrations.beam.model_handler import GATHER_BATCHES
from keras_elmo.integrations.beam.model_handler import BiLMModelHandler
from keras_elmo.integrations.beam.model_handler import model_calls


class _Lengths(ModelHandler):
    def load_model(self):
        return None

    def run_inference(self, batch, model, inference_args=None):
        return [len(batch)] * len(batch)


def test_max_batch_weight_breaks_run_inference():
    handler = _Lengths(max_batch_weight=10, element_size_fn=len)
    assert handler.batch_elements_kwargs()["max_batch_weight"] == 10
    with pytest.raises(TypeError, match="'max_batch_weight'"):
        with beam.Pipeline(runner="FnApiRunner") as p:
            _ = p | beam.Create(["ab", "cde"]) | RunInference(handler)


def test_model_calls_keep_the_padded_token_budget():
    lengths = [5, 1, 9, 3, 9, 2, 30, 4]
    batch = [(b"", (b"t",) * n) for n in lengths]
    calls = model_calls(batch, batch_size=64, batch_tokens=20)
    # By length: 1 2 3 4 5 | 9 9 | 30 (alone, over the budget by itself).
    assert [[lengths[i] for i in call] for call in calls] == [
        [1, 2, 3, 4],
        [5, 9],
        [9],
        [30],
    ]
    for call in calls:
        longest = max(lengths[i] for i in call)
        assert len(call) * longest <= 20 or len(call) == 1
    assert sorted(i for call in calls for i in call) == list(range(8))


def test_model_calls_hold_at_most_batch_size_sentences():
    # 10 sentences of 1..10 tokens, shuffled; 3 per call, budget ample.
    lengths = [7, 3, 10, 1, 5, 9, 2, 8, 4, 6]
    batch = [(b"", (b"t",) * n) for n in lengths]
    calls = model_calls(batch, batch_size=3, batch_tokens=4096)
    assert [[lengths[i] for i in call] for call in calls] == [
        [1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
        [10],
    ]


def test_model_calls_sort_stably():
    # Equal lengths keep their input order (as the in-process engine).
    batch = [(b"", (b"t",) * n) for n in (2, 1, 2, 1)]
    assert model_calls(batch, batch_size=2, batch_tokens=4096) == [
        [1, 3],
        [0, 2],
    ]


def test_handler_gathers_a_chunk_of_sentences_per_beam_batch():
    # Beam's batches are the in-process engine's chunks (16 model calls'
    # worth), on Beam's plain per-bundle path: no length keys, no state.
    handler = BiLMModelHandler({"preset": "elmo_small_en"}, batch_size=8)
    kwargs = handler.batch_elements_kwargs()
    assert GATHER_BATCHES == CHUNK_BATCHES == 16
    assert kwargs["min_batch_size"] == kwargs["max_batch_size"] == 128
    assert kwargs.get("max_batch_duration_secs") is None
    assert kwargs.get("length_fn") is None
