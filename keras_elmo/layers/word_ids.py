"""`WordIds`: string tokens -> a model's word-lexicon ids."""

import keras

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.layers.character_ids import _check_string_dtype
from keras_elmo.layers.character_ids import _to_string_tensor
from keras_elmo.layers.lexicon_lookup import LexiconLookup
from keras_elmo.text import unicode_lexicon
from keras_elmo.text.lexicon_ops import tokens_to_word_ids


@keras_elmo_export("keras_elmo.layers.WordIds")
class WordIds(LexiconLookup, keras.layers.Layer):
    """Maps string tokens `[B, T]` to word ids `[B, T]` of a word lexicon.

    For models with a word-embedding branch (ELMoForManyLangs with
    `word_dim > 0`): each token, cut to its first
    `max_characters_per_token - 2` code points as its characters are, is
    looked up in `lexicon`; a token not in it gets the `oov` id and `""`
    (padding) the `pad` id. Ids are not shifted (they index the word
    embedding's rows directly). Runs in the TensorFlow graph (a hash
    table); TensorFlow backend only.

    Args:
        lexicon: list of `(word, id)` pairs.
        specials: dict or list of the ids of `oov`, `pad`, `bos`, `eos`
            (`keras_elmo.text.unicode_lexicon.WORD_SPECIALS`).
        max_characters_per_token: int. The truncation is to this minus 2.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        tokens: string tensor `[B, T]`; `""` is padding.

    Returns:
        int32 tensor `[B, T]`.

    Masking: produces no mask (the character ids carry it).

    Example:

    >>> layer = keras_elmo.layers.WordIds(
    ...     lexicon=[("中国", 0), ("<oov>", 1), ("<pad>", 2)],
    ...     specials=dict(oov=1, pad=2, bos=1, eos=1))
    >>> layer(tf.constant([["中国", "人", ""]])).numpy()
    array([[0, 1, 2]], dtype=int32)
    """

    SPECIAL_NAMES = unicode_lexicon.WORD_SPECIALS

    def __call__(self, tokens, *args, **kwargs):
        if not hasattr(tokens, "dtype") or isinstance(tokens, (list, tuple)):
            tokens = _to_string_tensor(tokens)
        _check_string_dtype(tokens)
        return super().__call__(tokens, *args, **kwargs)

    def call(self, tokens):
        return tokens_to_word_ids(
            tokens, self.table, self.specials, self.max_characters_per_token
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def compute_output_spec(self, tokens):
        _check_string_dtype(tokens)
        return keras.KerasTensor(tuple(tokens.shape), dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update(self._lexicon_config())
        return config
