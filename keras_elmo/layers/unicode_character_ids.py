"""`UnicodeCharacterIds`: string tokens -> a model's own character ids."""

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.layers.character_ids import CharacterIds
from keras_elmo.layers.lexicon_lookup import LexiconLookup
from keras_elmo.text import char_vocab
from keras_elmo.text import unicode_lexicon
from keras_elmo.text.lexicon_ops import tokens_to_unicode_char_ids


@keras_elmo_export("keras_elmo.layers.UnicodeCharacterIds")
class UnicodeCharacterIds(LexiconLookup, CharacterIds):
    """Maps string tokens `[B, T]` to character-lexicon ids `[B, T, 50]`.

    The variant of `CharacterIds` for models with their own character
    table (ELMoForManyLangs): a character is a Unicode code point looked
    up in `lexicon`, not a UTF-8 byte. A token's first `48` code points
    `c_1..c_n` become (every id shifted by +1, so 0 still means "no
    token"):

        [bow, id(c_1), ..., id(c_n), eow, pad, ..., pad] + 1

    with `id(c) = oov` for a code point not in the lexicon. A token equal
    to the lexicon's `bos` (`eos`) entry (e.g. the literal `"<bos>"`) is
    the sentence boundary token `[bow, bos, eow, pad, ...] + 1`, and `""`
    an all-zero row (padding). Runs in the TensorFlow graph (a hash
    table), so a SavedModel needs no Python; TensorFlow backend only.
    Invalid UTF-8 bytes become U+FFFD first.

    Args:
        lexicon: list of `(character, id)` pairs (ids are table rows).
        specials: dict or list of the ids of `bow`, `eow`, `oov`, `pad`,
            `bos`, `eos` (`keras_elmo.text.unicode_lexicon.CHAR_SPECIALS`).
        max_characters_per_token: int. Slots per token (50).
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        tokens: string tensor `[B, T]`; `""` is padding.

    Returns:
        int32 tensor `[B, T, 50]`.

    Masking: produces no Keras mask; padding tokens are all-zero rows.

    Example:

    >>> layer = keras_elmo.layers.UnicodeCharacterIds(
    ...     lexicon=[("中", 0), ("国", 1)],
    ...     specials=dict(bow=2, eow=3, oov=4, pad=5, bos=6, eos=7))
    >>> layer(tf.constant([["中国", ""]]))[0, 0, :5].numpy()
    array([3, 1, 2, 4, 6], dtype=int32)
    """

    SPECIAL_NAMES = unicode_lexicon.CHAR_SPECIALS

    def __init__(
        self,
        lexicon,
        specials,
        max_characters_per_token=char_vocab.MAX_CHARS_PER_TOKEN,
        **kwargs,
    ):
        super().__init__(lexicon, specials, max_characters_per_token, **kwargs)
        if self.max_characters_per_token < 3:
            raise ValueError(
                "Received an invalid value for argument "
                "`max_characters_per_token`, expected an integer >= 3, got "
                f"{max_characters_per_token!r}."
            )
        names = unicode_lexicon.specials_dict(
            self.specials, unicode_lexicon.CHAR_SPECIALS
        )
        self.boundary_tokens = tuple(
            unicode_lexicon.lexicon_token(self.lexicon, names[b])
            for b in ("bos", "eos")
        )

    def call(self, tokens):
        return tokens_to_unicode_char_ids(
            tokens,
            self.table,
            self.specials,
            self.boundary_tokens,
            self.max_characters_per_token,
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.max_characters_per_token,)

    def get_config(self):
        config = super().get_config()
        config.update(self._lexicon_config())
        return config
