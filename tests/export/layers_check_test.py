"""One `layers` check (`all` / `top` / `average`) for every embedding
entry point: the same message, naming the argument, the modes and the
value, from the Embedder, the HDF5 writer, Beam and Spark."""

import numpy as np
import pytest

import keras_elmo
from keras_elmo.embedding import hdf5_output
from keras_elmo.embedding.batching import check_layers
from keras_elmo.embedding.batching import select_layers
from tests.conftest import tiny_bilm

MESSAGE = (
    "Received an invalid value for argument `layers`, expected one of "
    "('all', 'top', 'average'), got 'middle'."
)


def _embedder():
    keras_elmo.Embedder(tiny_bilm()).embed([["a"]], layers="middle")


def _hdf5_writer():
    hdf5_output.embed_file(None, "in.txt", "out.hdf5", layers="middle")


def _spark_options():
    pytest.importorskip("pyspark")
    from keras_elmo.integrations.spark.dataframe import check_options

    check_options("middle", 1, "float32")


def _spark_counts():
    pytest.importorskip("pyspark")
    from keras_elmo.integrations.spark.output_counts import check_counts

    check_counts(None, {}, "middle")


def _beam_handler():
    pytest.importorskip("apache_beam")
    from keras_elmo.integrations.beam import BiLMModelHandler

    BiLMModelHandler({}, layers="middle")


@pytest.mark.parametrize(
    "call",
    [
        lambda: check_layers("middle"),
        _embedder,
        _hdf5_writer,
        _spark_options,
        _spark_counts,
        _beam_handler,
    ],
    ids=["check", "embedder", "hdf5", "spark-options", "spark-counts", "beam"],
)
def test_every_entry_point_gives_the_same_message(call):
    with pytest.raises(ValueError) as error:
        call()
    assert str(error.value) == MESSAGE


def test_the_check_names_the_argument_it_is_given():
    with pytest.raises(ValueError) as error:
        select_layers(np.zeros((3, 1, 2), np.float32), "mean")
    assert str(error.value) == (
        "Received an invalid value for argument `mode`, expected one of "
        "('all', 'top', 'average'), got 'mean'."
    )
    for mode in ("all", "top", "average"):
        assert check_layers(mode) is None
