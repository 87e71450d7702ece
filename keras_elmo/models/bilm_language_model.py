"""`BiLMLanguageModel`: a `BiLM` backbone plus the shared LM softmax."""

import keras

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.layers.lm_softmax import LMSoftmax
from keras_elmo.layers.next_token_states import NextTokenStates
from keras_elmo.layers.sentence_boundaries import AddSentenceBoundaries
from keras_elmo.layers.sentence_boundaries import TokenMask
from keras_elmo.layers.unique_tokens import GatherUniqueTokens
from keras_elmo.layers.unique_tokens import UniqueTokens
from keras_elmo.models.bilm import BiLM
from keras_elmo.text import char_vocab
from keras_elmo.utils.validation import check_instance


@keras_elmo_export("keras_elmo.BiLMLanguageModel")
class BiLMLanguageModel(keras.Model):
    """The biLM language-modelling task: next word forward, previous backward.

    Reuses the backbone's layers on the sentences with `<S>`/`</S>` kept,
    takes the top biLSTM layer's states that predict each word
    (`NextTokenStates`), applies dropout, and owns the softmax `W` `[V, P]`
    shared by both directions (Peters et al. 2018, eq. 1 of section 3.1).
    The model outputs the hidden states; `keras_elmo.training.losses`
    turns them into the loss with a full or sampled softmax:

        loss = (CE_forward + CE_backward) / 2,   each averaged over tokens.

    Args:
        backbone: `keras_elmo.BiLM` (stateless).
        vocabulary_size: int. Size of the word vocabulary `V`.
        dropout: float. Dropout on the states fed to the softmax while
            training (bilm-tf: 0.1, the same rate as inside the biLSTM).
        **kwargs: standard `keras.Model` arguments.

    Call arguments:
        char_ids: int32 `[B, T, 50]`, sentences without boundaries.

    Returns:
        `{"forward": [B, T + 1, P], "backward": [B, T + 1, P]}`.
    """

    def __init__(self, backbone, vocabulary_size, dropout=0.1, **kwargs):
        check_instance("backbone", backbone, BiLM, "keras_elmo.BiLM")
        # === Layers ===
        add_boundaries = AddSentenceBoundaries(name="lm_add_boundaries")
        token_mask = TokenMask(name="lm_token_mask")
        states = NextTokenStates(name="next_token_states")
        forward_dropout = keras.layers.Dropout(dropout, name="forward_dropout")
        backward_dropout = keras.layers.Dropout(
            dropout, name="backward_dropout"
        )
        softmax = LMSoftmax(vocabulary_size, dtype="float32", name="softmax")

        # === Functional Model ===
        char_ids = keras.Input(
            shape=(None, char_vocab.MAX_CHARS_PER_TOKEN),
            dtype="int32",
            name="char_ids",
        )
        with_boundaries = add_boundaries(char_ids)
        unique, inverse = UniqueTokens(name="lm_unique_tokens")(with_boundaries)
        x = GatherUniqueTokens(
            dtype=backbone.dtype_policy, name="lm_gather_unique_tokens"
        )(backbone.embed_tokens(unique), inverse)
        layers = backbone.bilstm(x, mask=token_mask(with_boundaries))
        hidden = states(layers[-1])
        outputs = {
            "forward": forward_dropout(hidden["forward"]),
            "backward": backward_dropout(hidden["backward"]),
        }
        super().__init__(inputs=char_ids, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.vocabulary_size = vocabulary_size
        self.dropout = float(dropout)
        softmax.build((None, backbone.config.projection_dim))
        self.softmax = softmax

    def get_config(self):
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "vocabulary_size": self.vocabulary_size,
            "dropout": self.dropout,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(
            config["backbone"]
        )
        return cls(**config)
