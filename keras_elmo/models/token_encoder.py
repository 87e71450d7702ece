"""The biLM's token encoder: string tokens -> exactly the inputs it takes.

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
"""

import keras

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.layers.character_ids import CharacterIds
from keras_elmo.layers.unicode_character_ids import UnicodeCharacterIds
from keras_elmo.layers.word_ids import WordIds


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
