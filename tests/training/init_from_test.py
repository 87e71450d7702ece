"""`init_from`: the architecture and weights a fine-tuning run starts from."""

import logging
from types import SimpleNamespace

import keras
import numpy as np
import pytest

from keras_elmo.config import BiLMConfig
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.language_model import BiLMLanguageModel
from keras_elmo.training.training_config import init_from_files
from keras_elmo.training.training_config import load_init_from
from keras_elmo.training.training_config import resolve_init_from
from keras_elmo.training.training_config import resolve_model_config
from keras_elmo.weights import hdf5 as model_files

VOCABULARY_SIZE = 11


def _language_model(seed):
    keras.utils.set_random_seed(seed)
    backbone = BiLM(BiLMConfig.from_architecture("tiny"))
    return BiLMLanguageModel(backbone, VOCABULARY_SIZE)


def _saved(model, folder):
    paths = model_files.model_paths(str(folder))
    model.backbone.save_allennlp(paths["options"], paths["weights"])
    model_files.save_softmax_hdf5(model.softmax, paths["softmax"])
    return paths


def _values(variables):
    return [np.asarray(v.numpy()) for v in variables]


def _assert_same(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)


def test_resolve_model_config_reads_init_from_options(tmp_path):
    paths = _saved(_language_model(0), tmp_path)
    expected = BiLMConfig.from_options_json(paths["options"])
    config = SimpleNamespace(
        init_from=(paths["options"], paths["weights"]), model="small"
    )
    assert resolve_model_config(config) == expected
    config = SimpleNamespace(init_from=None, model="tiny")
    assert resolve_model_config(config) == BiLMConfig.from_architecture("tiny")
    config = SimpleNamespace(init_from=None, model=paths["options"])
    assert resolve_model_config(config) == expected


def test_load_init_from_copies_backbone_and_softmax(tmp_path, caplog):
    source = _language_model(0)
    paths = _saved(source, tmp_path)
    target = _language_model(1)
    for a, b in (
        (target.backbone, source.backbone),
        (target.softmax, source.softmax),
    ):
        assert not all(
            np.array_equal(x, y)
            for x, y in zip(_values(a.weights), _values(b.weights))
        )
    with caplog.at_level(logging.WARNING):
        load_init_from(
            target,
            VOCABULARY_SIZE,
            (paths["options"], paths["weights"], paths["softmax"]),
        )
    assert caplog.records == []
    _assert_same(
        _values(target.backbone.weights), _values(source.backbone.weights)
    )
    _assert_same(
        _values(target.softmax.weights), _values(source.softmax.weights)
    )


def test_load_init_from_without_softmax_keeps_it_and_warns(tmp_path, caplog):
    source = _language_model(0)
    paths = _saved(source, tmp_path)
    target = _language_model(1)
    random_softmax = _values(target.softmax.weights)
    with caplog.at_level(logging.WARNING):
        load_init_from(
            target, VOCABULARY_SIZE, (paths["options"], paths["weights"])
        )
    _assert_same(
        _values(target.backbone.weights), _values(source.backbone.weights)
    )
    _assert_same(_values(target.softmax.weights), random_softmax)
    described = f"init_from files {paths['options']!r}, {paths['weights']!r}"
    assert [r.getMessage() for r in caplog.records] == [
        f"Fine-tuning from {described}: no softmax file was given or found, "
        "so the softmax for the 11-word vocabulary starts from random "
        "weights and the first steps train it from scratch."
    ]
    assert caplog.records[0].name == "keras_elmo.training.training_config"


def test_trainer_starts_from_init_from(sample_vocab, tmp_path):
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.training_config import TrainingConfig
    from tests.training.training_helpers import TRAIN

    keras.utils.set_random_seed(0)
    backbone = BiLM(BiLMConfig.from_architecture("tiny"))
    source = BiLMLanguageModel(backbone, len(Vocabulary.load(sample_vocab)))
    paths = _saved(source, tmp_path / "source")
    config = TrainingConfig(
        train=TRAIN,
        vocab=sample_vocab,
        out_dir=str(tmp_path / "run"),
        model="small",
        init_from=(paths["options"], paths["weights"], paths["softmax"]),
        seed=1,
        verbose=False,
    )
    trainer = Trainer(config)
    assert trainer.model_config == BiLMConfig.from_options_json(
        paths["options"]
    )
    _assert_same(
        _values(trainer.model.backbone.weights),
        _values(source.backbone.weights),
    )
    _assert_same(
        _values(trainer.model.softmax.weights), _values(source.softmax.weights)
    )


def _folder_with_vocabulary(model, folder, words):
    paths = _saved(model, folder)
    with open(paths["vocabulary"], "w") as f:
        f.write("\n".join(words) + "\n")
    return paths


WORDS = ["<S>", "</S>", "<UNK>"] + [f"w{i}" for i in range(8)]


def test_one_source_loads_weights_and_its_softmax_for_its_vocabulary(
    tmp_path,
):
    source = _language_model(0)
    paths = _folder_with_vocabulary(source, tmp_path / "model", WORDS)
    run_vocabulary = tmp_path / "run_vocab.txt"
    run_vocabulary.write_text("\n".join(WORDS) + "\n")
    target = _language_model(1)
    config = SimpleNamespace(init_from=(str(tmp_path / "model"),), model="x")
    assert resolve_model_config(config) == BiLMConfig.from_architecture("tiny")
    load_init_from(
        target, VOCABULARY_SIZE, config.init_from, str(run_vocabulary)
    )
    _assert_same(
        _values(target.backbone.weights), _values(source.backbone.weights)
    )
    _assert_same(
        _values(target.softmax.weights), _values(source.softmax.weights)
    )
    assert init_from_files(config.init_from) == [
        paths["options"],
        paths["weights"],
        paths["softmax"],
    ]


def test_one_source_keeps_a_random_softmax_for_another_vocabulary(
    tmp_path, caplog
):
    source = _language_model(0)
    _folder_with_vocabulary(source, tmp_path / "model", WORDS)
    run_vocabulary = tmp_path / "run_vocab.txt"
    run_vocabulary.write_text("\n".join(reversed(WORDS)) + "\n")
    target = _language_model(1)
    random_softmax = _values(target.softmax.weights)
    with caplog.at_level(logging.WARNING):
        load_init_from(
            target,
            VOCABULARY_SIZE,
            (str(tmp_path / "model"),),
            str(run_vocabulary),
        )
    _assert_same(
        _values(target.backbone.weights), _values(source.backbone.weights)
    )
    _assert_same(_values(target.softmax.weights), random_softmax)
    (message,) = [r.getMessage() for r in caplog.records]
    assert "is for its own vocabulary, not this run's" in message, message


def test_a_source_of_another_format_is_refused_naming_init_from(tmp_path):
    model = _language_model(0)
    keras_file = tmp_path / "bilm.keras"
    model.backbone.save(str(keras_file))
    with pytest.raises(ValueError) as info:
        resolve_init_from((str(keras_file),))
    message = str(info.value)
    assert "`init_from`" in message and "is a keras model" in message, message
    assert "options.json + weights.hdf5" in message, message


def test_init_from_reaches_the_one_loader(monkeypatch, tmp_path):
    from keras_elmo.presets import sources

    seen = []

    def load(source, build, *args, **kwargs):
        seen.append(source)
        raise LookupError("stopped at the loader")

    monkeypatch.setattr(sources, "load", load)
    for init_from in (("elmo_small_en",), ("o.json", "w.hdf5", "s.hdf5")):
        with pytest.raises(LookupError):
            resolve_init_from(init_from)
    assert seen[0] == "elmo_small_en"
    assert (seen[1].options, seen[1].weights, seen[1].softmax) == (
        "o.json",
        "w.hdf5",
        "s.hdf5",
    )
