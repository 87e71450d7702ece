"""Training data: the word vocabulary, corpus statistics, the LM dataset."""

from keras_elmo.data.corpus import CorpusStats
from keras_elmo.data.corpus import list_files
from keras_elmo.data.corpus import scan_corpus
from keras_elmo.data.lm_dataset import make_lm_dataset
from keras_elmo.data.vocabulary import Vocabulary

__all__ = [
    "Vocabulary",
    "CorpusStats",
    "list_files",
    "scan_corpus",
    "make_lm_dataset",
]
