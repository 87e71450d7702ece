"""`TokenEmbeddingCache`: precomputed biLM token embeddings for a vocabulary."""

import os

import keras
from keras import ops

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.layers.token_ids import CharacterIds
from keras_elmo.text import char_vocab

# Rows of the cache before the vocabulary's.
PADDING_ROW, BOS_ROW, EOS_ROW = 0, 1, 2
NUM_SPECIAL_ROWS = 3
# Tokens per char-CNN batch when the cache is filled.
FILL_BATCH = 4096


def load_vocabulary(vocabulary):
    """A list of unique, non-empty str tokens from a list or a file.

    Args:
        vocabulary: list of str, a `keras_elmo.data.Vocabulary`, or a path
            to a vocabulary file in bilm-tf format (one token per line,
            `<S>`, `</S>`, `<UNK>` first).

    Returns:
        list of str, in the given order, without repeats or `""` (the
        padding token, never looked up).
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        vocabulary = Vocabulary.load(vocabulary)
    tokens = getattr(vocabulary, "tokens", vocabulary)
    if isinstance(tokens, (bytes, str)) or not hasattr(tokens, "__iter__"):
        raise TypeError(
            "Received an invalid value for argument `vocabulary`, expected "
            "a list of str tokens or the path of a vocabulary file, got "
            f"{type(vocabulary).__name__}."
        )
    seen, unique = set(), []
    for token in tokens:
        if not isinstance(token, str):
            raise TypeError(
                "Received an invalid value for argument `vocabulary`: every "
                f"token must be a str, got {token!r}."
            )
        if token and token not in seen:
            seen.add(token)
            unique.append(token)
    if not unique:
        raise ValueError(
            "Received an invalid value for argument `vocabulary`, expected "
            "at least one non-empty token, got none."
        )
    return unique


class _Unowned:
    """Holds the biLM without Keras tracking it a second time."""

    def __init__(self, bilm):
        self.bilm = bilm


class TokenEmbeddingCache(keras.layers.Layer):
    """String tokens -> a biLM's token embeddings `x`, cached for a vocabulary.

    ELMo's layer 0 is context-free: a token's `x` (char-CNN, highway,
    projection; `[P]`) depends only on its characters, and costs about a
    quarter of the biLM's FLOPs (`original`: 54 of 204 MFLOP per token).
    This layer computes `x` once for every vocabulary token (and for `<S>`,
    `</S>` and the padding token) into a non-trainable weight `embeddings`
    (`[3 + V, P]`: padding, `<S>`, `</S>`, then the vocabulary in order).
    At call time, in the graph, known tokens are looked up
    (`keras.layers.StringLookup`, then one gather) and only the unknown
    ones run through the biLM's char-CNN, highway and projection:

        x[b, t] = embeddings[3 + vocab_index(tok)]   if tok in vocabulary
                = bilm.embed_tokens(char_ids(tok))    otherwise

    so the result equals the uncached biLM's `x` up to float rounding.

    The values are computed when the layer is built, from the biLM's
    weights at that time, and saved with the layer (a `.keras` file holds
    them next to the biLM's weights, so loading one gives a matching
    cache). After changing the biLM's weights, call `refresh()`.

    Args:
        vocabulary: list of str, a `keras_elmo.data.Vocabulary`, or the
            path of a bilm-tf vocabulary file (see `load_vocabulary`).
        bilm: the stateless `keras_elmo.BiLM` whose embeddings are cached.
            Not tracked by this layer (its owner tracks and saves it).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        tokens: string tensor `[B, T]`, `""` as padding (right-padded).

    Returns:
        float tensor `[B, T + 2, P]`: `x` of `<S>`, the tokens, `</S>` at
        position `n_b + 1`, then padding; what `BiLM.contextualize` takes.
    """

    def __init__(self, vocabulary, bilm, **kwargs):
        super().__init__(**kwargs)
        if bilm.config.has_char_lexicon:
            raise ValueError(
                "A token-embedding cache (`vocabulary=`) needs a biLM with "
                "UTF-8 byte characters (bilm-tf); this one has its own "
                "character lexicon (ELMoForManyLangs). Pass "
                "vocabulary=None."
            )
        self.vocabulary = load_vocabulary(vocabulary)
        self._owner = _Unowned(bilm)
        self.projection_dim = int(bilm.config.projection_dim)
        self.character_ids = CharacterIds(name="character_ids")
        # Index 0 is every out-of-vocabulary string, 1..V the vocabulary.
        self.lookup = keras.layers.StringLookup(
            vocabulary=self.vocabulary,
            num_oov_indices=1,
            mask_token=None,
            output_mode="int",
            name="lookup",
        )

    def build(self, input_shape=None):
        rows = NUM_SPECIAL_ROWS + len(self.vocabulary)
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(rows, self.projection_dim),
            initializer=lambda shape, dtype=None: self._compute(dtype),
            trainable=False,
        )

    def _compute(self, dtype=None):
        """`[3 + V, P]`: `x` of padding, `<S>`, `</S>`, then each token."""
        import numpy as np
        import tensorflow as tf

        special = np.zeros(
            (NUM_SPECIAL_ROWS, char_vocab.MAX_CHARS_PER_TOKEN), np.int32
        )
        special[BOS_ROW] = char_vocab.BOS_TOKEN_IDS
        special[EOS_ROW] = char_vocab.EOS_TOKEN_IDS
        bilm = self._owner.bilm
        rows = [bilm.embed_tokens(special[:, None, :])[:, 0]]
        for start in range(0, len(self.vocabulary), FILL_BATCH):
            chunk = tf.constant(self.vocabulary[start : start + FILL_BATCH])
            ids = self.character_ids(chunk[:, None])
            rows.append(bilm.embed_tokens(ids)[:, 0])
        rows = [ops.cast(r, dtype or "float32") for r in rows]
        return ops.concatenate(rows, axis=0)

    def refresh(self):
        """Recomputes the cache from the biLM's current weights."""
        if not self.built:
            return  # building computes it
        self.embeddings.assign(self._compute(self.embeddings.dtype))

    def call(self, tokens):
        bilm = self._owner.bilm
        real = ops.not_equal(tokens, "")  # [B, T]
        known = ops.cast(self.lookup(tokens), "int32")  # 0 = unknown
        unknown = ops.logical_and(real, ops.equal(known, 0))
        rows = ops.where(real, known + (NUM_SPECIAL_ROWS - 1), PADDING_ROW)
        # Unknown tokens: char-CNN on just those, appended after the cache.
        flat_unknown = ops.reshape(unknown, (-1,))
        where_unknown = ops.nonzero(flat_unknown)[0]
        char_ids = ops.reshape(
            self.character_ids(tokens), (-1, char_vocab.MAX_CHARS_PER_TOKEN)
        )
        computed = bilm.embed_tokens(ops.take(char_ids, where_unknown, 0)[None])
        table = ops.concatenate(
            [ops.cast(self.embeddings, computed.dtype), computed[0]], axis=0
        )
        rank = ops.cumsum(ops.cast(flat_unknown, "int32")) - 1
        first = ops.shape(self.embeddings)[0]
        rows = ops.where(
            unknown, ops.reshape(first + rank, ops.shape(rows)), rows
        )
        # Boundaries: <S> first, </S> right after each row's last token.
        lengths = ops.sum(ops.cast(real, "int32"), axis=1)[:, None]
        rows = ops.pad(rows, [[0, 0], [1, 1]], constant_values=PADDING_ROW)
        positions = ops.arange(ops.shape(rows)[1], dtype="int32")[None, :]
        rows = ops.where(ops.equal(positions, 0), BOS_ROW, rows)
        rows = ops.where(ops.equal(positions, lengths + 1), EOS_ROW, rows)
        return ops.take(table, rows, axis=0)

    def compute_output_shape(self, input_shape):
        steps = None if input_shape[1] is None else input_shape[1] + 2
        return (input_shape[0], steps, self.projection_dim)

    def get_config(self):
        config = super().get_config()
        config["vocabulary"] = self.vocabulary
        return config
