"""`init_from`: the architecture and weights a fine-tuning run starts from."""

import logging
from types import SimpleNamespace

import keras
import numpy as np

from keras_elmo.config import BiLMConfig
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.language_model import BiLMLanguageModel
from keras_elmo.training.training_config import load_init_from
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
    assert [r.getMessage() for r in caplog.records] == [
        "Fine-tuning without a softmax file: the softmax for the 11-word "
        "vocabulary starts from random weights, so the first steps train "
        "it from scratch."
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
