"""`BiLM`: the character-aware bidirectional language model (functional)."""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.config import BiLMConfig
from keras_elmo.layers.char_cnn_embedding import CharCNNEmbedding
from keras_elmo.layers.highway import Highway
from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.layers.sentence_boundaries import AddSentenceBoundaries
from keras_elmo.layers.sentence_boundaries import RemoveSentenceBoundaries
from keras_elmo.layers.sentence_boundaries import TokenMask
from keras_elmo.layers.unique_tokens import GatherUniqueTokens
from keras_elmo.layers.unique_tokens import UniqueTokens
from keras_elmo.models import bilm_lexicon
from keras_elmo.models.bilm_inputs import check_char_ids
from keras_elmo.models.bilm_loaders import BiLMLoaders
from keras_elmo.models.bilm_outputs import elmo_layers as elmo_layers
from keras_elmo.models.bilm_outputs import output_dict
from keras_elmo.models.bilm_state import CarriedStates
from keras_elmo.models.token_encoder import token_encoder_for
from keras_elmo.text import char_vocab
from keras_elmo.utils.backend import check_backend


class _Holder:
    """Holds a layer without Keras tracking it."""

    def __init__(self, layer):
        self.layer = layer


@keras_elmo_export("keras_elmo.BiLM")
class BiLM(BiLMLoaders, keras.Model):
    """ELMo's biLM: char-CNN token embeddings and a residual biLSTM.

    Data flow (`B` sentences of `T` tokens, `P` = `projection_dim`):

        char ids [B, T, 50] -> add <S>, </S> -> [B, T+2, 50]
        -> CharCNNEmbedding -> Highway x n -> Dense(P)   = x   [B, T+2, P]
        -> ResidualBiLSTM   -> h_1..h_L                        [B, T+2, 2P]
        -> strip <S>, </S>, zero padding.

    Outputs a dict: `"word_emb"` `[B, T, P]` (the context-free `x`),
    `"lstm_outputs1"` .. `"lstm_outputs{L}"` `[B, T, 2P]` (forward and
    backward, each layer including its residual), and `"mask"` `[B, T]`
    bool. ELMo's layer 0 is `[x; x]`; `keras_elmo.models.bilm.elmo_layers`
    turns the dict into the `L + 1` layers.

    Stateless by default: every call starts from zero LSTM states, so a
    sentence gets the same vectors whatever else is in the batch. With
    `stateful=True`, each row's final states (at its true length) are
    carried into the same row of the next call, as bilm-tf and AllenNLP do;
    `reset_states()` forgets them. A smaller batch uses the first rows, a
    larger one starts its extra rows from zeros. Stateful calls run
    eagerly (`bilm(char_ids)`), one batch after another.

    Input checks: `char_ids` must be an integer array or tensor of rank 3
    with 50 ids per token; concrete (NumPy or eager) inputs must also hold
    ids in `[0, 262)`. Anything else raises a `TypeError` or `ValueError`
    that names `char_ids`, the expectation and what was received (string
    tokens go through `keras_elmo.layers.CharacterIds` or `ElmoLayer`).

    Args:
        config: `keras_elmo.BiLMConfig`, or a dict of its fields.
        stateful: bool. Carry LSTM states across calls (default False).
        dropout: float. Dropout on each biLSTM layer's input while training
            (bilm-tf's default for training is 0.1); 0 at inference.
        dtype: dtype or `keras.DTypePolicy` for every layer.
        **kwargs: standard `keras.Model` arguments (e.g. `name`).

    Example:

    >>> bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
    >>> out = bilm(keras_elmo.batch_to_ids([["Hello", "world", "!"]]))
    >>> out["lstm_outputs2"].shape
    TensorShape([1, 3, 32])

    Reference:
        Peters et al. 2018, "Deep contextualized word representations".
    """

    def __init__(
        self, config, stateful=False, dropout=0.0, dtype=None, **kwargs
    ):
        if isinstance(config, dict):
            config = BiLMConfig(**config)
        if not isinstance(config, BiLMConfig):
            raise TypeError(
                "`config` must be a keras_elmo.BiLMConfig or a dict of its "
                f"fields, received {type(config).__name__}."
            )
        if stateful and config.has_word_branch:
            raise ValueError(
                "`stateful=True` is not supported for a biLM with a word "
                "embedding branch (`word_lexicon`); use stateful=False."
            )
        # === Layers ===
        add_boundaries = AddSentenceBoundaries(
            dtype=dtype,
            name="add_sentence_boundaries",
            **bilm_lexicon.boundary_args(config),
        )
        token_mask = TokenMask(dtype=dtype, name="token_mask")
        char_cnn = CharCNNEmbedding(
            filters=config.filters,
            char_embedding_dim=config.char_embedding_dim,
            activation=config.activation,
            dtype=dtype,
            name="char_cnn",
            **bilm_lexicon.char_cnn_args(config),
        )
        words = bilm_lexicon.word_branch(config, dtype)
        word_embedding = None if words is None else words[0]
        highway = Highway(
            num_layers=config.num_highway_layers, dtype=dtype, name="highway"
        )
        projection = keras.layers.Dense(
            config.projection_dim, dtype=dtype, name="token_projection"
        )
        bilstm = ResidualBiLSTM(
            units=config.lstm_units,
            projection_dim=config.projection_dim,
            num_layers=config.num_layers,
            cell_clip=config.cell_clip,
            projection_clip=config.projection_clip,
            use_skip_connections=config.use_skip_connections,
            dropout=dropout,
            dtype=dtype,
            name="bilstm",
        )
        strip = RemoveSentenceBoundaries(
            dtype=dtype, name="remove_sentence_boundaries"
        )
        unique_tokens = UniqueTokens(name="unique_tokens")
        gather_unique = GatherUniqueTokens(
            dtype=dtype, name="gather_unique_tokens"
        )

        # === Functional Model ===
        char_ids = keras.Input(
            shape=(None, char_vocab.MAX_CHARS_PER_TOKEN),
            dtype="int32",
            name="char_ids",
        )
        inputs = {"char_ids": char_ids}
        mask = token_mask(char_ids)
        with_boundaries = add_boundaries(char_ids)
        mask_with_boundaries = token_mask(with_boundaries)
        unique, inverse = unique_tokens(with_boundaries)
        if words is None:
            x = gather_unique(projection(highway(char_cnn(unique))), inverse)
        else:
            # ELMoForManyLangs: [word embedding; highway(char-CNN)] -> P.
            _, add_word_boundaries, token_features = words
            inputs["word_ids"] = keras.Input(
                shape=(None,), dtype="int32", name="word_ids"
            )
            word_ids = add_word_boundaries(inputs["word_ids"], token_mask=mask)
            chars = gather_unique(highway(char_cnn(unique)), inverse)
            x = projection(token_features([word_embedding(word_ids), chars]))
        if stateful:
            inputs["initial_h"] = keras.Input(
                shape=(2, None, config.projection_dim),
                batch_size=config.num_layers,
                name="initial_h",
            )
            inputs["initial_c"] = keras.Input(
                shape=(2, None, config.lstm_units),
                batch_size=config.num_layers,
                name="initial_c",
            )
            layers, (final_h, final_c) = bilstm(
                x,
                mask=mask_with_boundaries,
                initial_state=(inputs["initial_h"], inputs["initial_c"]),
                return_state=True,
            )
        else:
            layers = bilstm(x, mask=mask_with_boundaries)
        outputs = output_dict(strip, x, layers, mask)
        if stateful:
            outputs["final_h"], outputs["final_c"] = final_h, final_c
        super().__init__(
            inputs=inputs if len(inputs) > 1 else char_ids,
            outputs=outputs,
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self.config = config
        self.stateful = bool(stateful)
        self.dropout = float(dropout)
        self.char_cnn = char_cnn
        self.highway = highway
        self.token_projection = projection
        self.word_embedding = word_embedding
        self.bilstm = bilstm
        self.remove_boundaries = strip
        self._carried = CarriedStates(config) if stateful else None
        # Not a tracked sublayer: it has no weights, and the config makes
        # it again, so `.keras` files stay as they were.
        self._encoder = _Holder(token_encoder_for(config))

    @property
    def token_encoder(self):
        """The layer `encode_tokens` runs (`keras_elmo.models.
        token_encoder`): `CharacterIds` for a bilm-tf model."""
        return self._encoder.layer

    def encode_tokens(self, tokens):
        """String tokens `[B, T]` (`""` = padding) -> this biLM's inputs:
        char ids `[B, T, 50]`, or `{"char_ids", "word_ids"}` with a word
        branch (in graph; what ElmoLayer, the SavedModel and BiLMEmbedder
        run on string tokens)."""
        return self._encoder.layer(tokens)

    @property
    def num_output_layers(self):
        """`L + 1`: the token layer plus one per biLSTM layer."""
        return self.config.num_layers + 1

    @property
    def output_dim(self):
        """`2P`, the width of every ELMo layer."""
        return 2 * self.config.projection_dim

    def embed_tokens(self, char_ids):
        """Layer 0's context-free token embeddings `x`, with no boundaries.

        The char-CNN, highway and projection of the biLM on their own:
        char ids `[B, T, 50]` -> `[B, T, P]`, each token independently of
        the others. This is what a token-embedding cache precomputes
        (`ElmoLayer(vocabulary=...)`); `contextualize` takes it on from
        there.
        """
        if self.word_embedding is not None or isinstance(char_ids, dict):
            return bilm_lexicon.embed_tokens(self, char_ids)
        return self.token_projection(self.highway(self.char_cnn(char_ids)))

    def contextualize(self, token_embeddings, mask, training=None):
        """Runs the biLSTM on token embeddings made by `embed_tokens`.

        Stateless. `bilm(char_ids)` equals
        `contextualize(embed_tokens(add_boundaries(char_ids)), mask)`.

        Args:
            token_embeddings: float `[B, T + 2, P]`: `<S>` at position 0,
                row `b`'s tokens at `1..n_b`, `</S>` at `n_b + 1`, then
                padding (whose values do not matter).
            mask: bool `[B, T]`, True for real tokens (right-padded).
            training: bool. Enables the biLSTM's dropout.

        Returns:
            The dict a stateless `bilm(char_ids)` returns.
        """
        steps = ops.shape(token_embeddings)[1]
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        positions = ops.arange(steps, dtype="int32")[None, :]
        with_boundaries = ops.less(positions, lengths[:, None] + 2)
        layers = self.bilstm(
            token_embeddings, mask=with_boundaries, training=training
        )
        return output_dict(
            self.remove_boundaries, token_embeddings, layers, mask
        )

    def __call__(self, inputs, *args, **kwargs):
        check_backend("BiLM")
        rows = self.config.char_table_rows
        if isinstance(inputs, dict):
            if "char_ids" in inputs:
                check_char_ids(inputs["char_ids"], rows)
        else:
            if self.word_embedding is not None:
                raise TypeError(bilm_lexicon.NEEDS_WORD_IDS)
            inputs = check_char_ids(inputs, rows)
        if not self.stateful or isinstance(inputs, dict):
            return super().__call__(inputs, *args, **kwargs)
        initial_h, initial_c = self._carried.initial(inputs)
        outputs = dict(
            super().__call__(
                {
                    "char_ids": inputs,
                    "initial_h": initial_h,
                    "initial_c": initial_c,
                },
                *args,
                **kwargs,
            )
        )
        self._carried.update(outputs.pop("final_h"), outputs.pop("final_c"))
        return outputs

    def reset_states(self):
        """Forgets the carried LSTM states (stateful mode)."""
        if self._carried is not None:
            self._carried.reset()

    def carry_states(self, h, c):
        """Sets the carried LSTM states (stateful mode): `h` `[L, 2, S, P]`
        and `c` `[L, 2, S, H]` float32, rows as `reset_states` forgets
        them (`keras_elmo.models.bilm_state`). The next call starts its
        row `b` from row `b` of these."""
        if self._carried is None:
            raise ValueError(
                "carry_states needs a BiLM built with stateful=True."
            )
        self._carried.load(h, c)

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["config"] = BiLMConfig(**config["config"])
        trainable = config.pop("trainable", True)
        bilm = cls(**config)
        bilm.trainable = trainable  # the setter reaches every sublayer
        return bilm

    def get_config(self):
        return {
            "config": self.config.to_dict(),
            "stateful": self.stateful,
            "dropout": self.dropout,
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.saving.serialize_keras_object(self.dtype_policy),
        }
