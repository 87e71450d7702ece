"""What Beam 2.77 does not offer, which keras_elmo.beam works around:
`ModelHandler(max_batch_weight=...)` is passed by RunInference to
`beam.BatchElements`, which has no such argument (docs/BEAM.md,
"Upstream reports"); the handler keeps its token budget itself."""

import apache_beam as beam
import pytest
from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import RunInference

from keras_elmo.beam.model_handler import model_calls


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
    calls = model_calls(batch, batch_tokens=20)
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
