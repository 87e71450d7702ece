"""`BiLM`: the character-aware bidirectional language model (functional).

Input: char ids `[B, T, 50]` int32 (0 = padding token), checked by
`check_char_ids` with errors that say why; for a model with a word
lexicon, a dict `{"char_ids", "word_ids"}`. Output: `output_dict`, the
dict `{"word_emb": [B, T, P], "lstm_outputs1..L": [B, T, 2P],
"mask": [B, T]}`, from which `elmo_layers` builds ELMo's `L + 1` layers
(layer 0 = `[x; x]`). A stateful model carries its LSTM states across
calls in `CarriedStates` (an explicit opt-in with `reset_states()`).
The `from_*` constructors and `save_allennlp` are `BiLMLoaders`'
(`keras_elmo.models.bilm_io`).
"""

import keras
import numpy as np
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.config import BiLMConfig
from keras_elmo.layers.char_cnn_embedding import CharCNNEmbedding
from keras_elmo.layers.char_cnn_embedding import Highway
from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
from keras_elmo.layers.token_sequence import AddSentenceBoundaries
from keras_elmo.layers.token_sequence import GatherUniqueTokens
from keras_elmo.layers.token_sequence import RemoveSentenceBoundaries
from keras_elmo.layers.token_sequence import TokenMask
from keras_elmo.layers.token_sequence import UniqueTokens
from keras_elmo.models import token_encoder
from keras_elmo.models.bilm_io import BiLMLoaders
from keras_elmo.models.token_encoder import token_encoder_for
from keras_elmo.presets import sources as model_sources
from keras_elmo.text import char_vocab
from keras_elmo.utils import check_backend


def check_char_ids(char_ids, num_characters=char_vocab.NUM_CHARACTERS):
    """Validates a `BiLM` input; returns it (a nested list as an array).

    Checks the dtype (integer) and shape (`[B, T, 50]`) of any input, and
    for concrete values (NumPy arrays, eager tensors) that every id is in
    `[0, num_characters)` (262 for UTF-8 bytes, a Unicode lexicon's rows
    + 1); symbolic tensors are checked at trace time for
    dtype and shape only.
    """
    if isinstance(char_ids, (list, tuple)):
        char_ids = np.asarray(char_ids)
    dtype = getattr(char_ids, "dtype", None)
    shape = getattr(char_ids, "shape", None)
    if dtype is None or shape is None:
        raise TypeError(
            "`char_ids` must be an int array [B, T, 50] (see "
            f"keras_elmo.batch_to_ids), received {type(char_ids).__name__}: "
            f"{char_ids!r:.80}"
        )
    dtype = keras.backend.standardize_dtype(
        dtype
        if not isinstance(dtype, np.dtype) or dtype.kind not in "USO"
        else "string"
    )
    if dtype == "string":
        raise TypeError(
            "Received an invalid value for argument `char_ids`, expected "
            "int char ids [B, T, 50], got a string tensor of shape "
            f"{tuple(shape)}; map string tokens with "
            "keras_elmo.layers.CharacterIds or use ElmoLayer."
        )
    if not (dtype.startswith("int") or dtype.startswith("uint")):
        raise TypeError(
            "Received an invalid value for argument `char_ids`, expected "
            "integer char ids (int32, see keras_elmo.batch_to_ids), got "
            f"dtype {dtype}."
        )
    try:
        shape = tuple(shape)
    except ValueError:  # a graph tensor of unknown rank: checked later
        return char_ids
    width = char_vocab.MAX_CHARS_PER_TOKEN
    if len(shape) != 3 or shape[-1] not in (None, width):
        raise ValueError(
            "Received an invalid value for argument `char_ids`, expected "
            f"shape [B, T, {width}], got shape {shape}."
        )
    if isinstance(char_ids, np.ndarray):
        values = char_ids
    elif hasattr(char_ids, "numpy"):  # eager tensors only
        values = np.asarray(char_ids.numpy())
    else:
        return char_ids
    if values.size:
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= num_characters:
            bad = low if low < 0 else high
            where = tuple(int(i) for i in np.argwhere(values == bad)[0])
            raise ValueError(
                "Received an invalid value for argument `char_ids`, "
                f"expected ids in [0, {num_characters}), got "
                f"{bad} at index {where}."
            )
    return char_ids


def output_dict(strip, x, layers, mask):
    """The biLM's outputs: `x` and each biLSTM layer without `<S>`/`</S>`
    (`strip`, a `RemoveSentenceBoundaries`), and the token `mask`."""
    outputs = {"word_emb": strip(x, mask=mask)}
    for layer, sequence in enumerate(layers, start=1):
        outputs[f"lstm_outputs{layer}"] = strip(sequence, mask=mask)
    outputs["mask"] = mask
    return outputs


def elmo_layers(outputs):
    """ELMo's `L + 1` layers from a biLM output dict, built once here.

    `[h_0, h_1, ..., h_L]`, each `[B, T, 2P]`: layer 0 is the token
    embedding twice, `h_0 = [x; x]` (`"word_emb"`), so it has the width of
    the biLSTM layers `h_k = [h_k_forward; h_k_backward]`
    (`"lstm_outputs{k}"`), as AllenNLP's `_ElmoBiLm` builds it. Takes any
    dict with these keys (a `BiLM`'s, or a SavedModel signature's).
    """
    word_emb = outputs["word_emb"]
    num_lstm = sum(1 for key in outputs if key.startswith("lstm_outputs"))
    layers = [ops.concatenate([word_emb, word_emb], axis=-1)]
    layers += [outputs[f"lstm_outputs{k}"] for k in range(1, num_lstm + 1)]
    return layers


class CarriedStates:
    """Final LSTM states of the last call, per row, as AllenNLP keeps them.

    States are `h` `[L, 2, S, P]` and `c` `[L, 2, S, H]` (layer, direction,
    row). For a batch of `B` rows, `initial` returns the first `B` stored
    rows, with zero rows appended when `B > S`; `update` stores the new
    final states in rows `0..B-1` and keeps rows `B..S-1` from before, so
    the store holds the largest batch seen. A row whose new layer-0 state
    sums to exactly zero (a row that never ran) keeps its old state,
    AllenNLP's "used rows" rule, applied to `h` and `c` separately. Held
    as NumPy arrays, outside any graph.
    """

    def __init__(self, config):
        self.config = config
        self.reset()

    def reset(self):
        self.h = None
        self.c = None

    def initial(self, char_ids):
        batch = int(ops.shape(char_ids)[0])
        cfg = self.config
        h = np.zeros((cfg.num_layers, 2, batch, cfg.projection_dim), np.float32)
        c = np.zeros((cfg.num_layers, 2, batch, cfg.lstm_units), np.float32)
        if self.h is not None:
            rows = min(batch, self.h.shape[2])
            h[:, :, :rows] = self.h[:, :, :rows]
            c[:, :, :rows] = self.c[:, :, :rows]
        return h, c

    def load(self, h, c):
        """Replaces the stored states with copies of `h`, `c`."""
        cfg = self.config
        h = np.array(h, np.float32)
        c = np.array(c, np.float32)
        want = (cfg.num_layers, 2)
        if (
            h.shape[:2] != want
            or c.shape[:3] != h.shape[:3]
            or h.shape[3] != cfg.projection_dim
            or c.shape[3] != cfg.lstm_units
        ):
            raise ValueError(
                "Received states of shapes h "
                f"{h.shape} and c {c.shape}, expected [{cfg.num_layers}, 2, "
                f"rows, {cfg.projection_dim}] and [{cfg.num_layers}, 2, "
                f"rows, {cfg.lstm_units}]."
            )
        self.h, self.c = h, c

    def update(self, final_h, final_c):
        try:
            final_h = ops.convert_to_numpy(final_h)
            final_c = ops.convert_to_numpy(final_c)
        except Exception as e:  # symbolic tensors inside a traced graph
            raise RuntimeError(
                "A stateful BiLM carries its states in Python between "
                "calls and must be called eagerly, `bilm(char_ids)`, not "
                "inside `predict`/`fit` or a `tf.function`."
            ) from e
        final_h = final_h.astype(np.float32)
        final_c = final_c.astype(np.float32)
        if self.h is None:
            self.h, self.c = final_h, final_c
            return
        self.h = _merge(self.h, final_h)
        self.c = _merge(self.c, final_c)


def _merge(old, new):
    """Rows `0..B-1` from `new` where used, all other rows from `old`."""
    batch = new.shape[2]
    used = new[0].sum(axis=(0, 2)) != 0.0  # [B], over directions and units
    rows = max(batch, old.shape[2])
    merged = np.zeros(new.shape[:2] + (rows, new.shape[3]), np.float32)
    merged[:, :, : old.shape[2]] = old
    merged[:, :, :batch][:, :, used] = new[:, :, used]
    return merged


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
            **token_encoder.boundary_args(config),
        )
        token_mask = TokenMask(dtype=dtype, name="token_mask")
        char_cnn = CharCNNEmbedding(
            filters=config.filters,
            char_embedding_dim=config.char_embedding_dim,
            activation=config.activation,
            dtype=dtype,
            name="char_cnn",
            **token_encoder.char_cnn_args(config),
        )
        words = token_encoder.word_branch(config, dtype)
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
            return token_encoder.embed_tokens(self, char_ids)
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
                raise TypeError(token_encoder.NEEDS_WORD_IDS)
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
        them (`keras_elmo.models.bilm`). The next call starts its
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


def load_bilm_or_elmo_layer(source):
    """`(model, description)`: a `BiLM`, or the `ElmoLayer` of a `.keras`
    file holding exactly one (so an export keeps its learned mix)."""
    return model_sources.load(source, _model_and_description)


def _model_and_description(resolved):
    return BiLM.model_from_resolved(resolved), resolved.description
