"""The shipped pretrained preset loads offline and behaves like its files."""

import os

import numpy as np
import pytest

import keras_elmo
from keras_elmo.presets import available_presets
from keras_elmo.presets import preset_dir


def test_elmo_small_en_is_shipped_and_loads():
    assert "elmo_small_en" in available_presets()
    path = preset_dir("elmo_small_en")
    for name in (
        "options.json",
        "weights.hdf5",
        "softmax.hdf5",
        "vocab.txt",
        "MODEL_CARD.md",
    ):
        assert os.path.exists(os.path.join(path, name)), name
    bilm = keras_elmo.BiLM.from_preset("elmo_small_en")
    assert 2 * bilm.config.projection_dim >= 256
    reference = keras_elmo.BiLM.from_allennlp(
        os.path.join(path, "options.json"), os.path.join(path, "weights.hdf5")
    )
    ids = keras_elmo.batch_to_ids([["The", "river", "bank", "."]])
    np.testing.assert_array_equal(
        bilm(ids)["lstm_outputs2"], reference(ids)["lstm_outputs2"]
    )
    layer = keras_elmo.layers.ElmoLayer.from_preset("elmo_small_en", dropout=0)
    assert layer(ids).shape == (1, 4, 2 * bilm.config.projection_dim)


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="elmo_small_en.*got 'elmo_huge'"):
        keras_elmo.BiLM.from_preset("elmo_huge")


def test_from_preset_refuses_unknown_keywords():
    with pytest.raises(TypeError, match="bogus_kw"):
        keras_elmo.BiLM.from_preset("elmo_small_en", bogus_kw=1)


def test_from_preset_without_weights_builds_the_architecture():
    import keras

    keras.utils.set_random_seed(3)
    fresh = keras_elmo.BiLM.from_preset("elmo_small_en", load_weights=False)
    trained = keras_elmo.BiLM.from_preset("elmo_small_en")
    assert fresh.config == trained.config
    assert [w.shape for w in fresh.weights] == [
        w.shape for w in trained.weights
    ]
    differ = [
        not np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(fresh.weights, trained.weights)
    ]
    assert any(differ)


def test_embed_refuses_a_directory_output_before_any_work(tmp_path, capsys):
    from keras_elmo.cli.main import main

    src = tmp_path / "s.txt"
    src.write_text("a b\n", encoding="utf-8")
    out = tmp_path / "DIR"
    out.mkdir()
    assert main(["embed", str(src), str(out), "--force"]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "Embedding" not in err
    assert not (tmp_path / "DIR.partial").exists()
    assert list(out.iterdir()) == []


def test_architectures_have_their_own_name_and_the_old_one_warns():
    assert keras_elmo.BiLMConfig.architectures() == [
        "medium",
        "original",
        "small",
        "tiny",
    ]
    tiny = keras_elmo.BiLMConfig.from_architecture("tiny")
    with pytest.warns(DeprecationWarning, match="from_architecture"):
        assert keras_elmo.BiLMConfig.from_preset("tiny") == tiny
    with pytest.raises(ValueError, match="architectures.*got 'elmo_small_en'"):
        keras_elmo.BiLMConfig.from_architecture("elmo_small_en")
