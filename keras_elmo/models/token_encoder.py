"""The biLM's token encoder and the layers its lexicons decide.

One owner for "tokens to model inputs": `BiLM.encode_tokens` calls the
encoder that `token_encoder_for(config)` makes, and `ElmoLayer` (string
input), the SavedModel signatures and `BiLMEmbedder` call
`BiLM.encode_tokens`, so a model with its own lexicons works wherever a
bilm-tf one does:

- UTF-8 bytes (bilm-tf, AllenNLP): `CharacterIds`, char ids `[B, T, 50]`;
- a Unicode character lexicon (ELMoForManyLangs, `word_dim = 0`):
  `UnicodeCharacterIds`, char ids `[B, T, 50]`;
- with a word-embedding branch: `LexiconTokenEncoder`, a dict
  `{"char_ids": [B, T, 50], "word_ids": [B, T]}`.

The `BiLM` layers that depend on the character format and the word branch
come from here too: a bilm-tf config (UTF-8 bytes, no words) gets exactly
the layers it always had, with no added arguments and no word branch; a
config with a Unicode character lexicon (`BiLMConfig.char_lexicon`) gets
its own boundary tokens, table size and padding id; with a word lexicon,
also the word embedding branch (ELMoForManyLangs: `[word embedding;
highway(char CNN)]` is projected to `P`).
"""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.layers.token_ids import CharacterIds
from keras_elmo.layers.token_ids import UnicodeCharacterIds
from keras_elmo.layers.token_ids import WordIds
from keras_elmo.layers.token_sequence import AddWordBoundaries
from keras_elmo.text import char_vocab as unicode_lexicon


def token_encoder_for(config):
    """The encoder layer of a `BiLMConfig` (see the module docstring)."""
    if not config.has_char_lexicon:
        return CharacterIds(name="character_ids")
    if not config.has_word_branch:
        return _char_ids(config)
    return LexiconTokenEncoder(
        char_lexicon=config.char_lexicon,
        char_specials=config.char_specials,
        word_lexicon=config.word_lexicon,
        word_specials=config.word_specials,
        max_characters_per_token=config.max_characters_per_token,
        name="token_encoder",
    )


def _char_ids(config):
    return UnicodeCharacterIds(
        lexicon=config.char_lexicon,
        specials=config.char_specials,
        max_characters_per_token=config.max_characters_per_token,
        name="character_ids",
    )


def lookup_tables(encoder):
    """The hash tables of an encoder (for a SavedModel to track)."""
    return list(getattr(encoder, "lookup_tables", []))


@keras_elmo_export("keras_elmo.models.LexiconTokenEncoder")
class LexiconTokenEncoder(keras.layers.Layer):
    """String tokens -> `{"char_ids", "word_ids"}` for a word-branch biLM.

    `char_ids` from `UnicodeCharacterIds(char_lexicon, char_specials)`,
    `word_ids` from `WordIds(word_lexicon, word_specials)`; both cut a
    token to its first `max_characters_per_token - 2` code points.

    Call arguments:
        tokens: string tensor `[B, T]`; `""` is padding.

    Returns:
        dict: `"char_ids"` int32 `[B, T, 50]`, `"word_ids"` int32
        `[B, T]`.
    """

    def __init__(
        self,
        char_lexicon,
        char_specials,
        word_lexicon,
        word_specials,
        max_characters_per_token=50,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.char_ids = UnicodeCharacterIds(
            char_lexicon,
            char_specials,
            max_characters_per_token,
            name="character_ids",
        )
        self.word_ids = WordIds(
            word_lexicon,
            word_specials,
            max_characters_per_token,
            name="word_ids",
        )
        self.max_characters_per_token = int(max_characters_per_token)

    @property
    def lookup_tables(self):
        return self.char_ids.lookup_tables + self.word_ids.lookup_tables

    def call(self, tokens):
        return {
            "char_ids": self.char_ids(tokens),
            "word_ids": self.word_ids(tokens),
        }

    def compute_output_spec(self, tokens):
        return {
            "char_ids": self.char_ids.compute_output_spec(tokens),
            "word_ids": self.word_ids.compute_output_spec(tokens),
        }

    def get_config(self):
        config = super().get_config()
        char_config = self.char_ids.get_config()
        word_config = self.word_ids.get_config()
        config.update(
            {
                "char_lexicon": char_config["lexicon"],
                "char_specials": char_config["specials"],
                "word_lexicon": word_config["lexicon"],
                "word_specials": word_config["specials"],
                "max_characters_per_token": self.max_characters_per_token,
            }
        )
        return config


def boundary_args(config):
    """`AddSentenceBoundaries` keyword arguments for `config`."""
    if not config.has_char_lexicon:
        return {}
    bos, eos = unicode_lexicon.boundary_char_ids(config.char_specials)
    return {"bos_ids": bos.tolist(), "eos_ids": eos.tolist()}


def char_cnn_args(config):
    """`CharCNNEmbedding` keyword arguments for `config`'s table."""
    if not config.has_char_lexicon:
        return {}
    return {
        "num_characters": config.char_table_rows,
        "pad_id": config.char_pad_id,
    }


def word_branch(config, dtype=None):
    """None, or `(Embedding, AddWordBoundaries, Concatenate)`."""
    if not config.has_word_branch:
        return None
    specials = unicode_lexicon.specials_dict(
        config.word_specials, unicode_lexicon.WORD_SPECIALS
    )
    return (
        keras.layers.Embedding(
            config.word_vocab_size,
            config.word_embedding_dim,
            dtype=dtype,
            name="word_embedding",
        ),
        AddWordBoundaries(
            specials["bos"],
            specials["eos"],
            specials["pad"],
            name="add_word_boundaries",
        ),
        keras.layers.Concatenate(axis=-1, dtype=dtype, name="token_features"),
    )


NEEDS_WORD_IDS = (
    "This biLM has a word embedding branch: it takes {'char_ids': "
    "[B, T, 50], 'word_ids': [B, T]}, made from string tokens by "
    "`bilm.encode_tokens(tokens)`; received char ids only."
)


def embed_tokens(bilm, inputs):
    """`BiLM.embed_tokens` for `{"char_ids"[, "word_ids"]}` inputs:
    `projection([word_embedding(w); highway(char_cnn(c))])`, or without
    words `projection(highway(char_cnn(c)))`."""
    if not isinstance(inputs, dict) or (
        bilm.word_embedding is not None and "word_ids" not in inputs
    ):
        raise TypeError(NEEDS_WORD_IDS)
    features = bilm.highway(bilm.char_cnn(inputs["char_ids"]))
    if bilm.word_embedding is not None:
        words = bilm.word_embedding(inputs["word_ids"])
        features = ops.concatenate([words, features], axis=-1)
    return bilm.token_projection(features)
