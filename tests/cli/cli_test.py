"""The `keras-elmo` command line: demo and convert."""

import json

import h5py
import pytest

from keras_elmo.cli.main import main


def test_demo_says_when_weights_are_random(capsys):
    assert main(["demo", "--random-weights", "tiny", "one two", "two one"]) == 0
    out = capsys.readouterr().out
    assert "RANDOMLY INITIALISED 'tiny'" in out
    assert "lstm_outputs2: (2, 2, 32) float32" in out
    assert "'two' s0 vs s1" in out


def test_demo_with_weights(reference_weights, capsys):
    options, weights = reference_weights("tiny")
    assert main(["demo", "--options", options, "--weights", weights]) == 0
    assert f"weights {weights}" in capsys.readouterr().out


def test_convert_round_trip_and_no_silent_overwrite(
    reference_weights, tmp_path, capsys
):
    options, weights = reference_weights("tiny")
    keras_file = str(tmp_path / "bilm.keras")
    assert (
        main(
            [
                "convert",
                "--options",
                options,
                "--weights",
                weights,
                "--to-keras",
                keras_file,
            ]
        )
        == 0
    )
    out_options = str(tmp_path / "o.json")
    out_weights = str(tmp_path / "w.hdf5")
    args = [
        "convert",
        "--from-keras",
        keras_file,
        "--to-options",
        out_options,
        "--to-weights",
        out_weights,
    ]
    assert main(args) == 0
    with h5py.File(weights) as a, h5py.File(out_weights) as b:
        name = "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/B"
        assert a[name][()].tobytes() == b[name][()].tobytes()
    assert json.load(open(out_options)) == json.load(open(options))
    # An existing output is never overwritten without --force.
    assert main(args) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(args + ["--force"]) == 0


def test_convert_from_a_keras_model_with_one_elmo_layer(
    reference_weights, tmp_path
):
    import keras

    import keras_elmo

    options, weights = reference_weights("tiny")
    elmo = keras_elmo.ElmoLayer.from_preset(
        keras_elmo.presets.sources.allennlp_files(options, weights, "tiny")
    )
    chars = keras.Input((None, 50), dtype="int32")
    model = keras.Model(chars, keras.layers.Dense(2)(elmo(chars)))
    keras_file = str(tmp_path / "classifier.keras")
    model.save(keras_file)
    out_weights = str(tmp_path / "w.hdf5")
    argv = ["convert", "--from-keras", keras_file, "--to-options"]
    argv += [str(tmp_path / "o.json"), "--to-weights", out_weights]
    assert main(argv) == 0
    with h5py.File(weights) as a, h5py.File(out_weights) as b:
        for name in (
            "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/B",
            "char_embed",
            "CNN_proj/W_proj",
        ):
            assert a[name][()].tobytes() == b[name][()].tobytes(), name


def test_convert_errors_are_clear(capsys):
    assert main(["convert", "--to-keras", "x.keras"]) == 2
    assert "received none" in capsys.readouterr().err
    assert main(["demo", "--options", "only.json"]) == 2
    assert "`--options` and `--weights` go together" in (
        capsys.readouterr().err
    )


def test_help_on_every_command(capsys):
    for command in ("demo", "convert"):
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0
        assert "usage: keras-elmo " + command in capsys.readouterr().out
