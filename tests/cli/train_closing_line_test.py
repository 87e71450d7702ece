"""`keras-elmo train` ends with one line: where the model is and the
command that embeds with it, and that command runs as printed."""

import json
import shlex

import h5py
import pytest

from keras_elmo.cli.main import main
from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import tiny_train_args


@pytest.mark.large
def test_the_closing_line_names_the_model_and_an_embed_command_that_runs(
    tmp_path, capsys, monkeypatch
):
    from keras_elmo.data.vocabulary import Vocabulary

    vocab = str(tmp_path / "vocab.txt")
    Vocabulary.build(TRAIN, min_count=2).save(vocab)
    out = str(tmp_path / "my run")
    flags = ("--steps-per-epoch", "2", "--batch-size", "8", "--epochs", "1")
    assert main(tiny_train_args(vocab, out, *flags)) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["epoch"] == 1
    last = captured.err.splitlines()[-1]
    assert last == (
        f"keras-elmo train: the model is in {out} (options.json, "
        "weights.hdf5, bilm.keras); embed with it: keras-elmo embed "
        f"sentences.txt vectors.hdf5 --model '{out}'"
    )
    # The printed command, as a shell would split it, embeds with the model.
    command = shlex.split(last.split("embed with it: ")[1])
    assert command[:2] == ["keras-elmo", "embed"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sentences.txt").write_text("the cat sat\n", encoding="utf-8")
    assert main(command[1:]) == 0
    with h5py.File(tmp_path / "vectors.hdf5", "r") as f:
        assert f["0"].shape == (3, 3, 32)
