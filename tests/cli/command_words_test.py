"""The command line's words say what to do: argparse's own error for an
unknown flag, in the command's usage; `convert` says what it wrote; an
unknown preset name gets the model it means, without a random-weights
hint nobody asked for."""

import pytest

from keras_elmo.cli.main import main
from keras_elmo.presets.sources import resolve_model


@pytest.mark.parametrize(
    "extra", [["--layers", "top"], ["--batchsize", "8"], ["-x"]]
)
def test_an_unknown_embed_flag_gets_argparse_error(extra, tmp_path, capsys):
    argv = ["embed", str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5")]
    with pytest.raises(SystemExit) as e:
        main(argv + extra)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: keras-elmo embed ")
    assert err.endswith(
        f"keras-elmo embed: error: unrecognized arguments: {' '.join(extra)}\n"
    )
    assert "runner" not in err.split("error:")[1]


def test_a_name_value_option_names_itself_and_the_runner(tmp_path, capsys):
    """`--name=value` is how Beam's pipeline options are given."""
    argv = ["embed", str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5")]
    assert main(argv + ["--layers=top"]) == 2
    err = capsys.readouterr().err
    assert "['--layers=top']" in err
    assert "need --runner" in err


def test_an_unknown_flag_gets_its_command_usage(capsys):
    with pytest.raises(SystemExit):
        main(["convert", "--batchsize", "8"])
    err = capsys.readouterr().err
    assert err.startswith("usage: keras-elmo convert ")
    assert (
        "keras-elmo convert: error: unrecognized arguments: --batchsize 8"
        in err
    )


def test_verbose_after_the_command(tmp_path, capsys):
    missing = str(tmp_path / "in.txt")
    assert main(["embed", missing, str(tmp_path / "o.hdf5"), "-v"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized" not in err
    assert err.startswith("keras-elmo embed: error: ")
    assert "in.txt" in err


def test_convert_says_what_it_wrote(reference_weights, tmp_path, capsys):
    options, weights = reference_weights("tiny")
    keras_file = str(tmp_path / "bilm.keras")
    argv = ["convert", "--options", options, "--weights", weights]
    assert main(argv + ["--to-keras", keras_file]) == 0
    assert capsys.readouterr().out == f"wrote {keras_file} (.keras model)\n"
    folder = str(tmp_path / "folder")
    out_options = str(tmp_path / "o.json")
    out_weights = str(tmp_path / "w.hdf5")
    argv = ["convert", "--from-keras", keras_file, "--out", folder]
    argv += ["--to-options", out_options, "--to-weights", out_weights]
    assert main(argv) == 0
    assert capsys.readouterr().out == (
        f"wrote {folder} (model folder)\n"
        f"wrote {out_options} (options.json)\n"
        f"wrote {out_weights} (weights.hdf5)\n"
    )


@pytest.mark.parametrize(
    "name, meant",
    [
        ("elmo_original_en", "'elmo_2x4096_en'"),
        ("elmo_large", "'elmo_2x4096_en'"),
        ("elmo_medium_en", "'elmo_2x2048_en'"),
    ],
)
def test_an_unknown_preset_suggests_what_it_means(name, meant):
    with pytest.raises(ValueError) as e:
        resolve_model(name)
    message = str(e.value)
    assert message.endswith(f"(no such preset or path). Did you mean {meant}?")


def test_a_mistyped_preset_still_gets_the_closest_spelling():
    with pytest.raises(ValueError, match=r"Did you mean 'elmo_2x1024_en'"):
        resolve_model("elmo_2x1024_eng")


def test_embed_unknown_preset_has_no_random_weights_hint(tmp_path, capsys):
    corpus = tmp_path / "in.txt"
    corpus.write_text("a b\n")
    argv = ["embed", str(corpus), str(tmp_path / "out.hdf5")]
    assert main(argv + ["--preset", "elmo_original_en"]) == 2
    err = capsys.readouterr().err
    assert "Did you mean 'elmo_2x4096_en'?" in err
    assert "random" not in err
