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


@pytest.mark.large
def test_the_epoch_json_has_its_own_line_after_the_progress_bar(
    tmp_path, capsys
):
    """24 lines are one batch: the epoch ends before the bar's target, and
    Keras leaves the bar's line open (the JSON was glued to it)."""
    from keras_elmo.data.vocabulary import Vocabulary

    corpus = tmp_path / "train.txt"
    corpus.write_text("the cat sat on the mat .\n" * 24, encoding="utf-8")
    vocab = str(tmp_path / "vocab.txt")
    Vocabulary.build(str(corpus), min_count=1).save(vocab)
    argv = ["train", "--train", str(corpus), "--vocab", vocab]
    argv += ["--architecture", "tiny", "--out", str(tmp_path / "run")]
    assert main(argv + ["--steps-per-epoch", "2", "--epochs", "1"]) == 0
    out = capsys.readouterr().out
    assert "1/2" in out.split("{")[0]  # the bar stopped short of 2/2
    # Whole lines with no escape codes (stdout is not a terminal here).
    assert "1/2 steps (50%)" in out and " - tokens/s: " in out
    assert not set("\x1b\r\b") & set(out)
    assert json.loads(out.splitlines()[-1])["epoch"] == 1
    assert out[out.index("{") - 1] == "\n"
