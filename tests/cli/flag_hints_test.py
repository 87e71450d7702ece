"""An unknown flag gets a line saying what to use instead: `embed
--layers top` names `--layers` and the flags that choose the layers on
every path (in process, `--runner`, `--spark-master`), and never reaches
Beam or Spark; a near miss gets the flag it resembles."""

import pytest

from keras_elmo.cli.main import main

LAYERS_HINT = (
    "keras-elmo embed: --layers is not a flag of embed: choose the layers "
    "with --all (the default), --top or --average.\n"
)


@pytest.mark.parametrize(
    "engine",
    [[], ["--runner", "DirectRunner"], ["--spark-master", "local[1]"]],
)
@pytest.mark.parametrize("layers", [["--layers", "top"], ["--layers", "x"]])
def test_layers_names_the_layer_flags_on_every_path(
    engine, layers, tmp_path, capsys
):
    output = tmp_path / "out.hdf5"
    argv = ["embed", str(tmp_path / "in.txt"), str(output)] + engine
    with pytest.raises(SystemExit) as e:
        main(argv + layers)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: keras-elmo embed ")
    lines = err.splitlines(keepends=True)
    assert lines[-2:] == [
        LAYERS_HINT,
        f"keras-elmo embed: error: unrecognized arguments: {' '.join(layers)}"
        "\n",
    ]
    assert "Beam" not in err and "Spark" not in err
    assert not output.exists()


def test_layers_with_equals_and_a_runner_is_not_a_pipeline_option(
    tmp_path, capsys
):
    argv = ["embed", str(tmp_path / "in.txt"), str(tmp_path / "out")]
    with pytest.raises(SystemExit) as e:
        main(argv + ["--runner", "DirectRunner", "--layers=top"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert LAYERS_HINT in err
    assert err.endswith("unrecognized arguments: --layers=top\n")


def test_layers_with_equals_names_the_layer_flags_first(tmp_path, capsys):
    argv = ["embed", str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5")]
    assert main(argv + ["--layers=top"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "keras-elmo embed: error: Unrecognized arguments ['--layers=top']: "
        + LAYERS_HINT[len("keras-elmo embed: ") : -1]
        + " Beam pipeline options need --runner.\n"
    )


@pytest.mark.parametrize(
    "command, typo, flag",
    [
        (["embed", "in.txt", "out.hdf5"], "--batchsize", "--batch-size"),
        (["convert"], "--optons", "--options"),
    ],
)
def test_a_near_miss_gets_the_flag_it_resembles(command, typo, flag, capsys):
    with pytest.raises(SystemExit) as e:
        main(command + [typo, "8"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    name = command[0]
    assert (
        f"keras-elmo {name}: {typo} is not a flag of {name}: did you mean "
        f"{flag}?\n" in err
    )
    assert err.endswith(f"error: unrecognized arguments: {typo} 8\n")


def test_a_flag_unlike_any_gets_no_hint(capsys):
    with pytest.raises(SystemExit):
        main(["presets", "--colour", "red"])
    err = capsys.readouterr().err
    assert "did you mean" not in err and "is not a flag" not in err
