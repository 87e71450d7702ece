"""Keras layers of the ELMo biLM, in data-flow order.

Building blocks only: they know nothing of models, data files, training
or export. `keras_elmo.layers.ElmoLayer`, a head over a whole `BiLM`,
lives in `keras_elmo.models` and is published here by `keras_elmo`.
"""

from keras_elmo.layers.char_cnn_embedding import CharCNNEmbedding
from keras_elmo.layers.char_cnn_embedding import Highway
from keras_elmo.layers.lm_softmax import LMSoftmax
from keras_elmo.layers.lm_softmax import NextTokenStates
from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.layers.scalar_mix import ScalarMix
from keras_elmo.layers.token_ids import CharacterIds
from keras_elmo.layers.token_ids import UnicodeCharacterIds
from keras_elmo.layers.token_ids import WordIds
from keras_elmo.layers.token_sequence import AddSentenceBoundaries
from keras_elmo.layers.token_sequence import AddWordBoundaries
from keras_elmo.layers.token_sequence import GatherUniqueTokens
from keras_elmo.layers.token_sequence import RemoveSentenceBoundaries
from keras_elmo.layers.token_sequence import TokenMask
from keras_elmo.layers.token_sequence import UniqueTokens

__all__ = [
    "CharacterIds",
    "UnicodeCharacterIds",
    "WordIds",
    "AddSentenceBoundaries",
    "AddWordBoundaries",
    "TokenMask",
    "UniqueTokens",
    "GatherUniqueTokens",
    "CharCNNEmbedding",
    "Highway",
    "ResidualBiLSTM",
    "RemoveSentenceBoundaries",
    "ScalarMix",
    "NextTokenStates",
    "LMSoftmax",
]
