"""A refused rerun over a finished HDF5 output says what changed since.

`embed_file` (and `keras-elmo embed`) never overwrite OUTPUT without
`force`; when OUTPUT records the run that wrote it (`keras_elmo_run`),
the refusal adds whether it is the very same run (nothing to redo) or
which of the model, the input, the settings or the version changed, as
Beam's and Spark's refusals do. Anything else at OUTPUT (not HDF5, HDF5
from another tool) gets the plain refusal, and is never touched."""

import h5py
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.embedding import hdf5_output as hdf5_embedding
from tests.conftest import tiny_bilm

LINES = ["The cat sat on the mat .", "Hello", "", "naïve café"]
PLAIN = "exists; pass `force=True` to overwrite it."


def _input(tmp_path, lines=LINES):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _refusal(embedder, src, dst, layers="all"):
    with pytest.raises(FileExistsError) as caught:
        embedder.embed_file(src, dst, layers=layers)
    return str(caught.value)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """`(embedder, input, output)`: a finished run of the tiny biLM."""
    tmp_path = tmp_path_factory.mktemp("finished")
    embedder = keras_elmo.Embedder(tiny_bilm(3), batch_size=2)
    src, dst = _input(tmp_path), str(tmp_path / "out.hdf5")
    embedder.embed_file(src, dst)
    return embedder, src, dst


def _unchanged(dst):
    with open(dst, "rb") as f:
        return f.read()


def test_the_same_run_again_is_refused_as_nothing_to_redo(finished):
    embedder, src, dst = finished
    before = _unchanged(dst)
    message = _refusal(embedder, src, dst)
    assert message.endswith(
        "overwrite it. It is a finished run of the same model, input "
        "files, settings and version: nothing to redo."
    )
    assert _unchanged(dst) == before


def test_a_changed_setting_model_or_input_is_named(finished, tmp_path):
    embedder, src, dst = finished
    before = _unchanged(dst)
    message = _refusal(embedder, src, dst, layers="top")
    assert "It is a finished run; changed: layers ('all' -> 'top')." in message
    other = keras_elmo.Embedder(tiny_bilm(4), batch_size=2)
    message = _refusal(other, src, dst)
    assert "changed: the model (" in message
    assert "layers" not in message
    edited = _input(tmp_path, LINES[:-1] + ["naive cafe"])
    message = _refusal(embedder, edited, dst)
    assert "changed: " in message and "the model" not in message
    assert "input" in message.split("changed: ")[1]
    assert _unchanged(dst) == before


def test_anything_else_at_output_gets_the_plain_refusal(tmp_path):
    embedder = keras_elmo.Embedder(tiny_bilm(3), batch_size=2)
    src = _input(tmp_path)
    precious = tmp_path / "precious.hdf5"
    precious.write_bytes(b"not an HDF5 file")
    assert _refusal(embedder, src, str(precious)).endswith(PLAIN)
    assert precious.read_bytes() == b"not an HDF5 file"
    foreign = str(tmp_path / "foreign.hdf5")
    with h5py.File(foreign, "w") as f:
        f["0"] = [1.0, 2.0]
    assert _refusal(embedder, src, foreign).endswith(PLAIN)
    assert not hdf5_embedding.records_run(foreign)
    with h5py.File(foreign, "a") as f:
        f.attrs["keras_elmo_run"] = "[1, 2]"  # not a run record
    assert _refusal(embedder, src, foreign).endswith(PLAIN)
    # `force` still overwrites, and the new file records its run.
    embedder.embed_file(src, foreign, force=True)
    assert hdf5_embedding.records_run(foreign)


def test_the_cli_says_it_in_its_own_flags(tmp_path, capsys):
    src, dst = _input(tmp_path), str(tmp_path / "out.hdf5")
    argv = ["embed", src, dst, "--random-weights", "tiny"]
    assert main(argv) == 0
    capsys.readouterr()
    before = _unchanged(dst)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "exists; pass --force to overwrite it." in err
    assert "nothing to redo" in err
    assert main(argv[:2] + [dst, "--top", "--random-weights", "tiny"]) == 2
    assert "changed: layers ('all' -> 'top')" in capsys.readouterr().err
    assert _unchanged(dst) == before
    # A file keras_elmo did not write: refused before any model loads.
    other = tmp_path / "other.hdf5"
    other.write_bytes(b"precious")
    assert main(["embed", src, str(other), "--random-weights", "tiny"]) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith("exists; pass --force to overwrite it.")
    assert main(argv + ["--force"]) == 0
