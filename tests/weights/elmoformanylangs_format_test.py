"""The ELMoForManyLangs folder format: detection, lexicon parsing quirks,
architecture lookup, config translation; our options.json extension."""

import json
import os
import shutil

import numpy as np
import pytest

import keras_elmo
from keras_elmo.weights import elmoformanylangs as efml
from tests import efml_reference as ref

PRESET = os.path.join(
    os.path.dirname(keras_elmo.__file__), "presets", "elmo_small_en"
)


def test_detection():
    for model in ref.MODELS:
        for layout in ref.LAYOUTS:
            assert efml.is_elmoformanylangs_folder(ref.folder(model, layout))
    assert not efml.is_elmoformanylangs_folder(PRESET)
    assert not efml.is_elmoformanylangs_folder(
        os.path.join(ref.folder("word"), "config.json")
    )
    assert not efml.is_elmoformanylangs_folder("/no/such/folder")


def test_detection_needs_config_path_and_both_pickles(tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(ref.folder("char"), folder)
    assert efml.is_elmoformanylangs_folder(str(folder))
    (folder / "config.json").write_text(json.dumps({"seed": 1}))
    assert not efml.is_elmoformanylangs_folder(str(folder))
    shutil.copy(os.path.join(ref.folder("char"), "config.json"), folder)
    os.remove(folder / "encoder.pkl")
    assert not efml.is_elmoformanylangs_folder(str(folder))
    with pytest.raises(FileNotFoundError, match="encoder.pkl is missing"):
        efml.read_folder(str(folder))


def test_read_lexicon_reproduces_the_packages_parsing(tmp_path):
    path = tmp_path / "x.dic"
    # U+3000 is eaten by strip() and restored; U+2028 splits a line (as
    # codecs' readline does); later lines win.
    path.write_text(
        "a\t0\n\u3000\t1\nb\t2\u2028c\t3\r\na\t4\n", encoding="utf-8"
    )
    assert efml.read_lexicon(str(path)) == {
        "a": 4,
        "\u3000": 1,
        "b": 2,
        "c": 3,
    }
    path.write_text("a\t0\nb c d\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: expected `token<TAB>id`"):
        efml.read_lexicon(str(path))


def test_specials_swap_bow_and_eow():
    model = efml.read_folder(ref.folder("word"))
    chars = efml.read_lexicon(os.path.join(ref.folder("word"), "char.dic"))
    specials = dict(
        zip(
            ("bow", "eow", "oov", "pad", "bos", "eos"),
            model.config_fields["char_specials"],
        )
    )
    assert specials["bow"] == chars["<eow>"]
    assert specials["eow"] == chars["<bow>"]
    assert model.architecture_source == os.path.join(
        ref.folder("word"), "tiny_cnn_4_6.json"
    )


def test_the_packages_own_configs_are_known(tmp_path):
    folder = tmp_path / "zh"
    shutil.copytree(ref.folder("word"), folder)
    os.remove(folder / "tiny_cnn_4_6.json")
    options = json.loads((folder / "config.json").read_text())
    options["config_path"] = (
        "C:\\Users\\authors\\configs\\cnn_50_100_512_4096_sample.json"
    )
    (folder / "config.json").write_text(json.dumps(options))
    architecture, source = efml.find_architecture(str(folder))
    assert source == "elmoformanylangs/configs/cnn_50_100_512_4096_sample.json"
    token_embedder = {
        "char_emb_layer.embedding.weight": np.zeros((72, 50), "float32"),
        "word_emb_layer.embedding.weight": np.zeros((19, 100), "float32"),
    }
    fields = efml.config_fields(
        str(folder), architecture, source, token_embedder
    )
    config = keras_elmo.BiLMConfig(**fields)
    assert (config.projection_dim, config.lstm_units) == (512, 4096)
    assert config.num_filters == 2048 and config.num_highway_layers == 2
    assert (config.char_embedding_dim, config.word_embedding_dim) == (50, 100)
    assert config.n_characters == 73 and config.word_vocab_size == 19
    options["config_path"] = "/elsewhere/unknown.json"
    (folder / "config.json").write_text(json.dumps(options))
    with pytest.raises(FileNotFoundError, match="unknown.json"):
        efml.find_architecture(str(folder))


def test_options_round_trip_with_lexicon_files(tmp_path):
    bilm_config = keras_elmo.BiLMConfig(
        **efml.read_folder(ref.folder("word")).config_fields
    )
    path = str(tmp_path / "options.json")
    bilm_config.to_options_json(path)
    options = json.load(open(path))
    assert options["token_encoder"]["char_lexicon"] == "char_lexicon.json"
    assert options["char_cnn"]["n_characters"] == 73
    assert keras_elmo.BiLMConfig.from_options_json(path) == bilm_config
    inline = bilm_config.to_options_dict()
    assert keras_elmo.BiLMConfig.from_options_json(inline) == bilm_config
    with pytest.raises(ValueError, match="pass the options file's path"):
        keras_elmo.BiLMConfig.from_options_json(options)
    os.remove(tmp_path / "word_lexicon.json")
    with pytest.raises(FileNotFoundError, match="word_lexicon.json"):
        keras_elmo.BiLMConfig.from_options_json(path)


def test_bilm_tf_configs_are_unchanged():
    config = keras_elmo.BiLMConfig.from_architecture("tiny")
    assert "token_encoder" not in config.to_options_dict()
    assert sorted(config.to_dict()) == sorted(
        [
            "filters",
            "char_embedding_dim",
            "num_highway_layers",
            "activation",
            "projection_dim",
            "lstm_units",
            "num_layers",
            "cell_clip",
            "projection_clip",
            "use_skip_connections",
            "n_characters",
            "max_characters_per_token",
        ]
    )
    with pytest.raises(ValueError, match="need a `char_lexicon`"):
        keras_elmo.BiLMConfig(word_lexicon=(("a", 0),))


def test_unmapped_or_misshapen_tensors_are_refused(tmp_path):
    model = efml.read_folder(ref.folder("char"))
    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig(**model.config_fields))
    from keras_elmo.weights.elmoformanylangs import load_weights

    model.encoder["extra.weight"] = np.zeros(3, "float32")
    with pytest.raises(ValueError, match="does not map.*extra.weight"):
        load_weights(bilm, model)
    del model.encoder["extra.weight"]
    key = "projection.weight"
    model.token_embedder[key] = model.token_embedder[key][:, :-1]
    with pytest.raises(ValueError, match="projection.weight.*expected shape"):
        load_weights(bilm, model)


def test_a_token_width_other_than_50_is_refused_by_name(tmp_path):
    # The package runs any `max_characters_per_token` (tokens cut to W - 2
    # code points); our character ids are 50 wide. Found by checking a
    # package-written model with W = 20: the refusal named neither the
    # folder nor the reason.
    folder = tmp_path / "w20"
    shutil.copytree(ref.folder("char"), folder)
    path = folder / "tiny_cnn_4_0.json"
    architecture = json.loads(path.read_text())
    architecture["token_embedder"]["max_characters_per_token"] = 20
    path.write_text(json.dumps(architecture))
    message = (
        r"ELMoForManyLangs architecture .*tiny_cnn_4_0\.json.*"
        r"max_characters_per_token is 20; keras_elmo reproduces only 50"
    )
    with pytest.raises(ValueError, match=message):
        efml.read_folder(str(folder))
    with pytest.raises(ValueError, match=message):
        keras_elmo.BiLM.from_elmoformanylangs(str(folder))
