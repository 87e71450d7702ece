"""No user file lost: an output that is (or resolves to) an input is
refused even with --force; an input that is a folder or a FIFO is named
as such; the loser of two concurrent `embed` runs is told another run
holds the output; Ctrl-C prints one line saying what was kept."""

import fcntl
import hashlib
import os
import sys

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.embedding import hdf5_output as hdf5_embedding
from keras_elmo.utils.atomic import OutputIsInput

TEXT = "the cat sat .\nhello\n\na b c\n"


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def tiny(reference_weights):
    return reference_weights("tiny")


def embed(tiny, src, dst, *extra):
    options, weights = tiny
    argv = ["embed", src, dst, "--options", options, "--weights", weights]
    return main(argv + ["--batch-size", "2", *extra])


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return str(path)


def links(corpus, tmp_path):
    """The corpus itself, a symlink to it, a hard link to it, and a
    path through a symlinked folder."""
    symlink = tmp_path / "symlink.hdf5"
    symlink.symlink_to(corpus)
    hardlink = tmp_path / "hardlink.hdf5"
    os.link(corpus, hardlink)
    folder = tmp_path / "alias"
    folder.symlink_to(tmp_path)
    return {
        "same": corpus,
        "symlink": str(symlink),
        "hardlink": str(hardlink),
        "folder": str(folder / "corpus.txt"),
        "dots": str(tmp_path / "alias" / ".." / "corpus.txt"),
    }


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "folder"])
def test_embed_refuses_its_input_as_output_even_forced(
    tiny, corpus, tmp_path, capsys, how
):
    before = digest(corpus)
    output = links(corpus, tmp_path)[how]
    assert embed(tiny, corpus, output, "--force") == 2
    err = capsys.readouterr().err
    assert "is the input" in err and "even with --force" in err, err
    assert repr(corpus) in err and repr(output) in err, err
    assert digest(corpus) == before
    assert not os.path.exists(output + ".partial")


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_embedder_embed_file_refuses_its_input_as_output(
    tiny, corpus, tmp_path, how
):
    before = digest(corpus)
    embedder = keras_elmo.Embedder(keras_elmo.BiLM.from_allennlp(*tiny))
    output = links(corpus, tmp_path)[how]
    with pytest.raises(OutputIsInput, match="is the input") as error:
        embedder.embed_file(corpus, output, force=True)
    assert error.value.argument == "output_path"
    assert error.value.input_argument == "input_path"
    assert digest(corpus) == before


def test_convert_refuses_an_output_that_is_an_input(tiny, tmp_path, capsys):
    options, weights = tiny
    before = digest(weights)
    argv = ["convert", "--options", options, "--weights", weights]
    assert main(argv + ["--to-options", str(tmp_path / "o.json"),
                        "--to-weights", weights, "--force"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "`--to-weights`" in err and "`--weights`" in err, err
    assert "is the input" in err and "even with --force" in err, err
    assert digest(weights) == before


def test_convert_out_folder_may_not_hold_an_input(tiny, tmp_path, capsys):
    options, weights = tiny
    model = tmp_path / "model"
    model.mkdir()
    for name, source in (("options.json", options), ("weights.hdf5", weights)):
        (model / name).write_bytes(open(source, "rb").read())
    inputs = sorted(os.listdir(model))
    argv = [
        "convert",
        "--options", str(model / "options.json"),
        "--weights", str(model / "weights.hdf5"),
        "--out", str(model),
        "--force",
    ]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Output folder `--out`" in err and "holds the input" in err, err
    assert sorted(os.listdir(model)) == inputs
    assert digest(model / "weights.hdf5") == digest(weights)


def test_convert_refuses_two_outputs_naming_one_file(tiny, tmp_path, capsys):
    options, weights = tiny
    same = str(tmp_path / "both")
    argv = ["convert", "--options", options, "--weights", weights,
            "--to-options", same, "--to-weights", same]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "`--to-options` and `--to-weights` are the same file" in err, err
    assert not os.path.exists(same)


def test_export_refuses_to_replace_the_model_it_reads(tiny, tmp_path, capsys):
    options, weights = tiny
    model = tmp_path / "model"
    model.mkdir()
    for name, source in (("options.json", options), ("weights.hdf5", weights)):
        (model / name).write_bytes(open(source, "rb").read())
    inputs = sorted(os.listdir(model))
    argv = ["export", "--model", str(model), "--out", str(model), "--force"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "`--out`" in err and "`--model`" in err, err
    assert "even with --force" in err, err
    assert sorted(os.listdir(model)) == inputs
    # Through --options/--weights inside OUT too.
    argv = ["export", "--options", str(model / "options.json"),
            "--weights", str(model / "weights.hdf5"), "--out", str(model),
            "--force"]  # fmt: skip
    assert main(argv) == 2
    assert "holds the input `--options`" in capsys.readouterr().err
    assert sorted(os.listdir(model)) == inputs


def test_embed_names_a_directory_input(tiny, tmp_path, capsys):
    folder = tmp_path / "corpus_dir"
    folder.mkdir()
    assert embed(tiny, str(folder), str(tmp_path / "out.hdf5")) == 2
    err = capsys.readouterr().err
    assert f"{str(folder)!r} is a directory" in err, err
    assert "not found" not in err


def test_embed_names_a_fifo_input(tiny, tmp_path, capsys):
    fifo = tmp_path / "corpus.fifo"
    os.mkfifo(fifo)
    assert embed(tiny, str(fifo), str(tmp_path / "out.hdf5")) == 2
    err = capsys.readouterr().err
    assert f"{str(fifo)!r} is not a regular file (a FIFO)" in err, err
    assert "not found" not in err


def test_the_loser_of_two_runs_is_told_another_run_holds_the_output(
    tiny, corpus, tmp_path, capsys
):
    """A live run's journal (its folder locked) is not "interrupted":
    the second run names the lock's holder and changes nothing."""
    dst = str(tmp_path / "out.hdf5")
    partial = dst + ".partial"
    os.mkdir(partial)
    (tmp_path / "out.hdf5.partial" / "manifest.json").write_text("{}")
    fd = os.open(partial, os.O_RDONLY)  # the winner's lock
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        for flags in ((), ("--resume",), ("--force",)):
            assert embed(tiny, corpus, dst, *flags) == 2, flags
            err = capsys.readouterr().err
            assert "Another run is writing the output" in err, (flags, err)
            assert f"lock is held by pid {os.getpid()}" in err, (flags, err)
            assert "interrupted" not in err and "--resume" not in err, err
            assert os.listdir(partial) == ["manifest.json"]
    finally:
        os.close(fd)
    assert not os.path.exists(dst)


def run_interrupted_embed(tiny, corpus, dst, monkeypatch, after_chunks):
    """`keras-elmo embed` from the command line (`main()` reading
    sys.argv), stopped by Ctrl-C once `after_chunks` chunks of 2 lines
    are committed; returns its exit status."""
    monkeypatch.setattr(hdf5_embedding, "CHUNK_BATCHES", 1)
    real = hdf5_embedding._embed_chunk
    calls = []

    def chunk(*args):
        if len(calls) == after_chunks:
            raise KeyboardInterrupt
        calls.append(1)
        real(*args)

    monkeypatch.setattr(hdf5_embedding, "_embed_chunk", chunk)
    options, weights = tiny
    monkeypatch.setattr(sys, "argv", [
        "keras-elmo", "embed", corpus, dst, "--options", options,
        "--weights", weights, "--batch-size", "2",
    ])  # fmt: skip
    return command_line_main()


def command_line_main():
    """`main()` as the console script runs it; an interrupt escaping it
    fails the test (instead of stopping pytest)."""
    try:
        return main()
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped main(): a traceback")


def test_ctrl_c_in_embed_prints_one_line_and_exits_130(
    tiny, corpus, tmp_path, monkeypatch, capsys
):
    dst = str(tmp_path / "out.hdf5")
    assert run_interrupted_embed(tiny, corpus, dst, monkeypatch, 1) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"keras-elmo embed: interrupted: 2 of 4 lines are kept in "
        f"{dst + '.partial'!r}; rerun with --resume (same input, output, "
        "model and settings) to continue"
    ), err
    assert "Traceback" not in "\n".join(err)
    monkeypatch.undo()
    assert embed(tiny, corpus, dst, "--resume") == 0
    assert os.path.isfile(dst) and not os.path.exists(dst + ".partial")


def test_ctrl_c_before_anything_is_kept(
    tiny, corpus, tmp_path, monkeypatch, capsys
):
    dst = str(tmp_path / "out.hdf5")
    assert run_interrupted_embed(tiny, corpus, dst, monkeypatch, 0) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        "keras-elmo embed: interrupted: 0 of 4 lines are kept in "
        f"{dst + '.partial'!r}; rerun with --resume (same input, output, "
        "model and settings) to continue"
    ), err


def test_ctrl_c_in_process_reaches_the_caller(
    tiny, corpus, tmp_path, monkeypatch, capsys
):
    """`main(argv)` called in-process prints the line, then re-raises."""
    monkeypatch.setattr(hdf5_embedding, "CHUNK_BATCHES", 1)

    def stop(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(hdf5_embedding, "_embed_chunk", stop)
    with pytest.raises(KeyboardInterrupt):
        embed(tiny, corpus, str(tmp_path / "out.hdf5"))
    err = capsys.readouterr().err
    assert "keras-elmo embed: interrupted: 0 of 4 lines are kept" in err
