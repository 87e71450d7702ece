"""String tokens -> the ids a biLM takes, as Keras layers.

- `CharacterIds`: ELMo character ids `[B, T, 50]` (UTF-8 bytes, bilm-tf
  and AllenNLP's `batch_to_ids`);
- `UnicodeCharacterIds`: a model's own character ids (a character
  lexicon, ELMoForManyLangs), `[B, T, 50]`;
- `WordIds`: a model's word-lexicon ids `[B, T]`.

`LexiconLookup` is what the two lexicon layers share: both check
`(entry, id)` pairs and the ids of their special entries
(`SPECIAL_NAMES`) with `keras_elmo.text.char_vocab.check_lexicon`,
look tokens up in one `tf.lookup.StaticHashTable` (`lexicon_table`) that
a SavedModel tracks (`lookup_tables`), and serialize the same three
settings.
"""

import keras
import numpy as np

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab
from keras_elmo.text import char_vocab as unicode_lexicon
from keras_elmo.text.char_vocab import lexicon_table
from keras_elmo.text.char_vocab import token_to_char_ids
from keras_elmo.text.char_vocab import tokens_to_char_ids
from keras_elmo.text.char_vocab import tokens_to_unicode_char_ids
from keras_elmo.text.char_vocab import tokens_to_word_ids
from keras_elmo.text.token_inputs import dense_tokens
from keras_elmo.text.token_inputs import describe
from keras_elmo.text.token_inputs import is_python_strings
from keras_elmo.text.token_inputs import python_tokens
from keras_elmo.text.token_inputs import token_shape
from keras_elmo.utils import check_backend
from keras_elmo.utils import is_tensorflow


@keras_elmo_export("keras_elmo.layers.CharacterIds")
class CharacterIds(keras.layers.Layer):
    """Maps string tokens to ELMo character ids `[B, T, 50]`.

    Runs entirely in the TensorFlow graph (no Python at call time), so a
    model that starts from raw strings can be saved, exported and
    served. The ids equal `keras_elmo.batch_to_ids` on the same tokens:
    UTF-8 bytes (at most 48 per token), begin/end-of-word markers, padding
    character 261 inside the 50 slots, and an all-zero row for the empty
    string `""`, which therefore marks a padding position.

    Takes text in the forms `ElmoLayer` takes, with the same ids for the
    same tokens (`keras_elmo.text.token_inputs.dense_tokens`):

    - padded string tokens `[B, T]` (`""` = padding; any rank >= 2);
    - ragged string tokens `[B, (n_i)]` (`tf.strings.split(sentences)`),
      padded with `""` to the longest row;
    - sentences, strings `[B]`, split like Python's `str.split()` (the
      SavedModel `default` signature's rule), so `T = max_i n_i`;
    - Python or NumPy strings: token lists of any lengths or sentences,
      padded in NumPy (`keras_elmo.pad_tokens`).

    On JAX and PyTorch (no string tensors) it takes the Python or NumPy
    strings only and encodes them in NumPy, as `keras_elmo.batch_to_ids`
    does.

    Call arguments:
        tokens: strings in one of the forms above.

    Returns:
        int32 tensor `[B, T, 50]`.

    Raises a `TypeError` naming `tokens` for a non-string input (e.g.
    int char ids, which go straight to `BiLM` instead), and a
    `ValueError` for ragged strings of another rank than 2.

    Masking: produces no Keras mask: the ids carry it (padding tokens are
    all-zero rows), which `CharCNNEmbedding` and `TokenMask` read.

    Example:

    >>> layer = keras_elmo.layers.CharacterIds()
    >>> ids = layer(tf.constant([["Hello", "!"], ["Hi", ""]]))
    >>> ids.shape
    TensorShape([2, 2, 50])
    >>> layer(tf.constant(["Hello !", "Hi"])).shape
    TensorShape([2, 2, 50])
    """

    def __call__(self, tokens, *args, **kwargs):
        if is_python_strings(tokens):
            # Token lists of any lengths or sentences -> `[B, T]`.
            tokens = python_tokens(tokens, "tokens")
            if not is_tensorflow():
                check_backend("CharacterIds")
                return keras.ops.convert_to_tensor(numpy_char_ids(tokens))
            tokens = _to_string_tensor(tokens)
        elif not is_tensorflow():
            check_backend("CharacterIds")
            raise TypeError(
                "Received an invalid value for argument `tokens`: on the "
                f"{keras.config.backend()} backend `CharacterIds` takes "
                "Python or NumPy strings (token lists or sentences) only, "
                f"got {type(tokens).__name__}; or pass ids from "
                "keras_elmo.batch_to_ids."
            )
        _check_string_dtype(tokens)
        return super().__call__(tokens, *args, **kwargs)

    def call(self, tokens):
        check_backend("CharacterIds")
        return tokens_to_char_ids(dense_tokens(tokens))

    def compute_output_shape(self, input_shape):
        shape = tuple(input_shape)
        if len(shape) < 2:
            shape = token_shape(shape)
        return shape + (char_vocab.MAX_CHARS_PER_TOKEN,)

    def compute_output_spec(self, tokens, mask=None):
        _check_string_dtype(tokens)
        return keras.KerasTensor(
            self.compute_output_shape(tokens.shape), dtype="int32"
        )


def numpy_char_ids(tokens):
    """Python or NumPy strings `[B, T]` -> int32 ids `[B, T, 50]` (NumPy,
    `batch_to_ids`' encoding; bytes are read as UTF-8)."""
    array = np.asarray(tokens, dtype=object)
    if array.ndim != 2:
        raise ValueError(
            "Received an invalid value for argument `tokens`, expected "
            f"strings of shape [B, T], got shape {array.shape}."
        )
    ids = np.zeros(array.shape + (char_vocab.MAX_CHARS_PER_TOKEN,), np.int32)
    for index, token in np.ndenumerate(array):
        if isinstance(token, bytes):
            token = token.decode("utf-8", "ignore")
        if not isinstance(token, str):
            raise TypeError(
                f"`tokens{list(index)}` must be a str token, received "
                f"{type(token).__name__}: {token!r:.80}"
            )
        if token:
            ids[index] = token_to_char_ids(token)
    return ids


def _to_string_tensor(tokens):
    import tensorflow as tf

    try:
        return tf.constant(tokens, dtype=tf.string)
    except (TypeError, ValueError) as e:
        raise TypeError(
            "`tokens` must be a string tensor [B, T] (or a rectangular "
            f"nested list of str), received {type(tokens).__name__}: "
            f"{tokens!r:.80} ({e})"
        ) from None


def _check_string_dtype(tokens):
    dtype = getattr(tokens, "dtype", None)
    if dtype is None:
        raise TypeError(
            "`tokens` must be a string tensor [B, T], received "
            f"{type(tokens).__name__}: {tokens!r:.80}"
        )
    dtype = keras.backend.standardize_dtype(dtype)
    if dtype != "string":
        raise TypeError(
            "Received an invalid value for argument `tokens`, expected a "
            f"string tensor [B, T], got dtype {dtype} with shape "
            f"{tuple(tokens.shape)}. Integer char ids go to "
            "`keras_elmo.BiLM` (or `ElmoLayer`) directly."
        )
    ragged = type(tokens).__name__ == "RaggedTensor" or getattr(
        tokens, "ragged", False
    )
    if ragged and len(tokens.shape) != 2:
        raise ValueError(
            "Received an invalid value for argument `tokens`, expected "
            "ragged string tokens [B, (n)] (tf.strings.split(sentences)), "
            f"got {describe(tokens)}."
        )


class LexiconLookup:
    """Mixin for a Keras layer that looks tokens up in a lexicon.

    Subclasses set `SPECIAL_NAMES` (e.g.
    `unicode_lexicon.CHAR_SPECIALS`); `get_config` adds
    `_lexicon_config()`. The constructor's arguments are the layers'
    (`lexicon`, `specials`, `max_characters_per_token`, and the standard
    `keras.layers.Layer` ones).
    """

    SPECIAL_NAMES = ()

    def __init__(
        self,
        lexicon,
        specials,
        max_characters_per_token=char_vocab.MAX_CHARS_PER_TOKEN,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.lexicon, self.specials = unicode_lexicon.check_lexicon(
            "lexicon", lexicon, specials, self.SPECIAL_NAMES
        )
        self.max_characters_per_token = int(max_characters_per_token)
        self.table = lexicon_table(self.lexicon)

    @property
    def lookup_tables(self):
        """The hash tables a SavedModel must track."""
        return [self.table]

    def _lexicon_config(self):
        return {
            "lexicon": [list(pair) for pair in self.lexicon],
            "specials": unicode_lexicon.specials_dict(
                self.specials, self.SPECIAL_NAMES
            ),
            "max_characters_per_token": self.max_characters_per_token,
        }


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
            `bos`, `eos` (`keras_elmo.text.char_vocab.CHAR_SPECIALS`).
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
            (`keras_elmo.text.char_vocab.WORD_SPECIALS`).
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
