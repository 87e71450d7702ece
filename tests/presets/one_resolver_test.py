"""Every entry point answers "which model?" through `resolve_model`."""

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.presets import sources
from keras_elmo.presets.sources import ResolvedModel


@pytest.fixture
def spy(monkeypatch):
    calls = []
    real = sources.resolve_model

    def resolve_model(source, *args, **kwargs):
        if not isinstance(source, ResolvedModel):  # already resolved
            calls.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(sources, "resolve_model", resolve_model)
    return calls


def test_library_entry_points_call_the_resolver(spy, folder):
    keras_elmo.BiLM.from_preset(folder)
    assert spy == [folder]
    keras_elmo.layers.ElmoLayer.from_preset(folder)
    assert spy[-1] == folder
    keras_elmo.Embedder.from_preset(folder)
    assert spy[-1] == folder
    assert len(spy) == 3


def test_beam_handler_calls_the_resolver(spy, folder):
    pytest.importorskip("apache_beam")  # the `beam` extra
    from keras_elmo.integrations.beam import BiLMModelHandler

    BiLMModelHandler({"model": folder}).load_model()
    assert spy == [folder]


@pytest.mark.large
def test_commands_call_the_resolver(spy, folder, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("a b c\nthe cat sat .\n", encoding="utf-8")
    out = str(tmp_path / "out.hdf5")
    assert main(["embed", str(text), out, "--model", folder]) == 0
    assert spy == [folder]
    saved = str(tmp_path / "saved")
    assert main(["export", "--model", folder, "--out", saved]) == 0
    assert spy[-1] == folder
    # The exported SavedModel is itself a source of `embed`.
    again = str(tmp_path / "again.hdf5")
    assert main(["embed", str(text), again, "--model", saved]) == 0
    assert spy[-1] == saved
    assert (
        main(["evaluate", "--data", str(text), "--model", "elmo_small_en"]) == 0
    )
    assert spy[-1] == "elmo_small_en"
    assert main(["demo", "--preset", folder, "a b"]) == 0
    assert spy[-1] == folder
    capsys.readouterr()


def test_random_weights_are_never_a_fallback(spy, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("a b\n", encoding="utf-8")
    out = str(tmp_path / "out.hdf5")
    assert main(["embed", str(text), out, "--preset", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "'tiny' is an architecture" in err and "--random-weights" in err
    with pytest.raises(ValueError, match="is an architecture"):
        keras_elmo.BiLM.from_preset("tiny")
    assert not (tmp_path / "out.hdf5").exists()
