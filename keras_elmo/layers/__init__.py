"""Keras layers of the ELMo biLM, in data-flow order."""

from keras_elmo.layers.char_cnn_embedding import CharCNNEmbedding
from keras_elmo.layers.character_ids import CharacterIds
from keras_elmo.layers.highway import Highway
from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.layers.scalar_mix import ScalarMix
from keras_elmo.layers.sentence_boundaries import AddSentenceBoundaries
from keras_elmo.layers.sentence_boundaries import RemoveSentenceBoundaries
from keras_elmo.layers.sentence_boundaries import TokenMask
from keras_elmo.layers.unique_tokens import GatherUniqueTokens
from keras_elmo.layers.unique_tokens import UniqueTokens

__all__ = [
    "CharacterIds",
    "AddSentenceBoundaries",
    "TokenMask",
    "UniqueTokens",
    "GatherUniqueTokens",
    "CharCNNEmbedding",
    "Highway",
    "ResidualBiLSTM",
    "RemoveSentenceBoundaries",
    "ScalarMix",
]
