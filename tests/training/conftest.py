"""Fixtures for the training tests: a vocabulary of the sample corpus."""

import pytest

from tests.training.training_helpers import TRAIN


@pytest.fixture(scope="session")
def sample_vocab(tmp_path_factory):
    from keras_elmo.data.vocabulary import Vocabulary

    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    Vocabulary.build(TRAIN, min_count=2).save(path)
    return str(path)
