"""`keras-elmo embed --runner` loads every model source `embed` loads: the
shipped preset, a folder, a published preset by name (served locally), and
an exported SavedModel; each gives the in-process command's vectors.

"The same vectors" is up to float32 rounding, which depends on the batch
shape (oneDNN picks kernels by shape): on the shipped model's long
sentences the in-process command itself differs between `--batch-size 1`
and 64 by slightly more than 1e-6 of the sentence's largest value. So the
pipeline must agree with `embed` within 1e-6 or within what `embed`
differs from itself across those batch sizes (measured here), whichever
is larger.
"""

import os
import shutil

import h5py
import numpy as np
import pytest

from keras_elmo.cli.main import main
from keras_elmo.embedding.embedding_records import iter_records
from keras_elmo.embedding.embedding_records import read_manifest
from keras_elmo.presets.published import PublishedModel
from keras_elmo.presets.published import register_preset
from keras_elmo.presets.published import unregister_preset
from tests.beam.corpus import real_lines
from tests.presets.preset_server import Server

pytestmark = pytest.mark.large

SAVED_MODEL = os.path.join(
    os.path.dirname(__file__), "..", "..", "savedmodel", "elmo_small_en", "1"
)


@pytest.fixture
def source(request, reference_weights, tmp_path, monkeypatch):
    """The `embed` model arguments of one kind of source."""
    kind = request.param
    if kind == "shipped":
        yield ["--preset", "elmo_small_en"]
    elif kind == "saved_model":
        yield ["--model", os.path.abspath(SAVED_MODEL)]
    else:
        options, weights = reference_weights("tiny")
        if kind == "folder":
            folder = tmp_path / "model"
            folder.mkdir()
            shutil.copy(options, folder / "options.json")
            shutil.copy(weights, folder / "weights.hdf5")
            yield ["--preset", str(folder)]
        else:  # published by name, downloaded from a local server
            monkeypatch.setenv("KERAS_ELMO_CACHE", str(tmp_path / "cache"))
            server = Server()
            with open(options, "rb") as f:
                server.files["/o.json"] = f.read()
            with open(weights, "rb") as f:
                server.files["/w.hdf5"] = f.read()
            register_preset(
                PublishedModel(
                    name="beam_test_tiny",
                    options_path="o.json",
                    weights_path="w.hdf5",
                    description="tiny test model",
                    training_data="none",
                    licence="none",
                    hosts=(server.url,),
                )
            )
            try:
                yield ["--preset", "beam_test_tiny"]
            finally:
                unregister_preset("beam_test_tiny")
                server.close()


@pytest.mark.parametrize(
    "source", ["shipped", "folder", "published", "saved_model"], indirect=True
)
def test_each_source_gives_embed_vectors(source, tmp_path):
    lines = real_lines(300, 308) + [b""]
    src = tmp_path / "in.txt"
    src.write_bytes(b"\n".join(lines) + b"\n")
    reference = str(tmp_path / "reference.hdf5")
    assert main(["embed", str(src), reference, "--top"] + source) == 0
    alone = str(tmp_path / "alone.hdf5")
    argv = ["embed", str(src), alone, "--top", "--batch-size", "1"]
    assert main(argv + source) == 0
    with h5py.File(alone, "r") as a, h5py.File(reference, "r") as b:
        spread = max(relative_error(a[k][()], b[k][()]) for k in b)
    output = str(tmp_path / "out")
    argv = ["embed", str(src), output, "--top", "--runner", "FnApiRunner"]
    assert main(argv + source) == 0
    assert read_manifest(output)["counts"]["lines"] == len(lines)
    records = sorted(iter_records(output), key=lambda r: r["line"])
    assert [r["line"] for r in records] == list(range(len(lines)))
    with h5py.File(reference, "r") as want:
        for record in records:
            expected = want[str(record["line"])][()]
            assert record["vectors"].shape == expected.shape
            error = relative_error(record["vectors"], expected)
            assert error <= max(1e-6, spread), (record["line"], spread)


def relative_error(got, want):
    if want.dtype.kind == "O" or want.size == 0:  # sentence_to_index, blank
        return 0.0
    return float(np.abs(got - want).max() / np.abs(want).max())
