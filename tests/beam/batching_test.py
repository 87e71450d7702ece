"""`--batching`: how Beam forms the batches of `BiLMModelHandler`.

`bundles` (the default) gathers `GATHER_BATCHES * --batch-size` sentences
of a bundle; `length-keys` is Beam's stateful length-aware
`BatchElements` (keys by length bucket, batches of `--batch-size`). Both
give `keras-elmo embed`'s vectors for every line; the flag needs
`--runner`.
"""

import pytest

from keras_elmo.cli.main import main
from keras_elmo.integrations.beam.model_handler import BUCKET_BOUNDARIES
from keras_elmo.integrations.beam.model_handler import BiLMModelHandler
from keras_elmo.integrations.beam.model_handler import keyed_length
from tests.beam.embed_checks import TWO_WORKERS
from tests.beam.embed_checks import check_output


def test_length_keys_select_beams_stateful_length_buckets():
    handler = BiLMModelHandler(
        {"preset": "elmo_small_en"}, batch_size=8, batching="length-keys"
    )
    kwargs = handler.batch_elements_kwargs()
    assert kwargs["min_batch_size"] == kwargs["max_batch_size"] == 8
    assert kwargs["max_batch_duration_secs"] == 0
    assert kwargs["length_fn"] is keyed_length
    assert kwargs["bucket_boundaries"] == list(BUCKET_BOUNDARIES)
    assert keyed_length(((b"f", 0), (b"a b c", (b"a", b"b", b"c")))) == 3


def test_an_unknown_batching_is_refused():
    with pytest.raises(ValueError, match="`batching`.*'bundles'.*'sorted'"):
        BiLMModelHandler({"preset": "elmo_small_en"}, batching="sorted")


@pytest.mark.large
@pytest.mark.parametrize("batching", ["bundles", "length-keys"])
def test_both_batchings_give_embed_vectors_for_every_line(
    corpus, tmp_path, batching
):
    output = str(tmp_path / "out")
    argv = ["embed", corpus["pattern"], output] + corpus["model"]
    argv += ["--batch-size", "3", "--batching", batching] + TWO_WORKERS
    assert main(argv) == 0
    manifest = check_output(corpus, output)
    assert (manifest["num_layers"], manifest["dim"]) == (3, 32)
