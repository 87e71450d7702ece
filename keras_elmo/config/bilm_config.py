"""`BiLMConfig`: the biLM hyper-parameters, <-> bilm-tf `options.json`."""

import dataclasses
import os
import warnings

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.config import options as options_json
from keras_elmo.text import char_vocab
from keras_elmo.text import char_vocab as unicode_lexicon
from keras_elmo.utils import check_positive_int

_ORIGINAL_FILTERS = (
    (1, 32),
    (2, 32),
    (3, 64),
    (4, 128),
    (5, 256),
    (6, 512),
    (7, 1024),
)


@keras_elmo_export("keras_elmo.BiLMConfig")
@dataclasses.dataclass(frozen=True)
class BiLMConfig:
    """Hyper-parameters of a character-aware biLM, as in bilm-tf.

    The fields use Keras names; `from_options_json` / `to_options_json`
    translate to and from the bilm-tf / AllenNLP `options.json` schema
    (`{"lstm": {...}, "char_cnn": {...}}`), so published models load as is.

    Args:
        filters: tuple of `(width, num_filters)` pairs, one convolution
            each over the 50 character slots of a token.
        char_embedding_dim: int. Size of each character's embedding.
        num_highway_layers: int. Highway layers after the char-CNN.
        activation: `"relu"` or `"tanh"`, applied after the max-pooling.
        projection_dim: int. `P`, the token embedding and LSTM output size.
        lstm_units: int. `H`, the LSTM memory cell size.
        num_layers: int. `L`, biLSTM layers per direction.
        cell_clip: float or None. Clip the memory cell to `[-c, c]`.
        projection_clip: float or None. Clip the projected output.
        use_skip_connections: bool. Residual connections from layer 2 on.
        n_characters: int. 261 (training files) or 262 (inference files);
            both describe the same 262-row character embedding.
        max_characters_per_token: int. Must be 50.
        char_lexicon: None (characters are UTF-8 bytes, bilm-tf) or a
            tuple of `(character, id)` pairs: a Unicode character table
            of its own (ELMoForManyLangs), `n_characters - 1` rows; see
            `keras_elmo.text.char_vocab`.
        char_specials: with `char_lexicon`, the ids of `bow`, `eow`,
            `oov`, `pad`, `bos`, `eos` in that order.
        word_lexicon: None or a tuple of `(word, id)` pairs: a word
            embedding branch, concatenated with the char-CNN (after its
            highway layers) before the projection.
        word_specials: with `word_lexicon`, the ids of `oov`, `pad`,
            `bos`, `eos`.
        word_embedding_dim: int. Size of a word's embedding (0 without
            `word_lexicon`).
        word_vocab_size: int. Rows of the word embedding (0 without
            `word_lexicon`; default: largest id + 1).
    """

    filters: tuple = _ORIGINAL_FILTERS
    char_embedding_dim: int = 16
    num_highway_layers: int = 2
    activation: str = "relu"
    projection_dim: int = 512
    lstm_units: int = 4096
    num_layers: int = 2
    cell_clip: float = 3.0
    projection_clip: float = 3.0
    use_skip_connections: bool = True
    n_characters: int = char_vocab.NUM_CHARACTERS
    max_characters_per_token: int = char_vocab.MAX_CHARS_PER_TOKEN
    char_lexicon: tuple = None
    char_specials: tuple = None
    word_lexicon: tuple = None
    word_specials: tuple = None
    word_embedding_dim: int = 0
    word_vocab_size: int = 0

    def __post_init__(self):
        filters = tuple(tuple(int(v) for v in pair) for pair in self.filters)
        object.__setattr__(self, "filters", filters)
        for width, num in filters:
            if width < 1 or num < 1 or width > self.max_characters_per_token:
                raise ValueError(
                    "Received an invalid value for argument `filters`, "
                    "expected (width, num_filters) pairs with 1 <= width "
                    f"<= {self.max_characters_per_token} and num_filters "
                    f">= 1, got {self.filters}."
                )
        if not filters:
            raise ValueError("`filters` must not be empty, got ().")
        for name in (
            "char_embedding_dim",
            "projection_dim",
            "lstm_units",
            "num_layers",
        ):
            check_positive_int(name, getattr(self, name))
        if self.num_highway_layers < 0:
            raise ValueError(
                "`num_highway_layers` must be >= 0, got "
                f"{self.num_highway_layers}."
            )
        if self.activation not in ("relu", "tanh"):
            raise ValueError(
                "Received an invalid value for argument `activation`, "
                f"expected 'relu' or 'tanh', got {self.activation!r}."
            )
        if self.char_lexicon is not None:
            self._check_lexicons()
        elif self.word_lexicon is not None or self.char_specials:
            raise ValueError(
                "`word_lexicon` and `char_specials` need a `char_lexicon` "
                "(a Unicode character table); got char_lexicon=None."
            )
        elif self.n_characters not in char_vocab.ACCEPTED_N_CHARACTERS:
            raise ValueError(
                "Received an invalid value for argument `n_characters`, "
                f"expected one of {char_vocab.ACCEPTED_N_CHARACTERS}, got "
                f"{self.n_characters}."
            )
        if self.max_characters_per_token != char_vocab.MAX_CHARS_PER_TOKEN:
            raise ValueError(
                "Received an invalid value for argument "
                "`max_characters_per_token`, expected "
                f"{char_vocab.MAX_CHARS_PER_TOKEN}, got "
                f"{self.max_characters_per_token}."
            )
        # Before anything is allocated: every source of a config
        # (options.json, ELMoForManyLangs, a dict, code) is bounded.
        options_json.check_sizes(
            {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        )

    def _check_lexicons(self):
        lexicon, specials = unicode_lexicon.check_lexicon(
            "char_lexicon",
            self.char_lexicon,
            self.char_specials or (),
            unicode_lexicon.CHAR_SPECIALS,
            rows=self.n_characters - 1,
        )
        pad = specials[unicode_lexicon.CHAR_SPECIALS.index("pad")]
        unicode_lexicon.check_pad_unshared("char_lexicon", lexicon, pad)
        object.__setattr__(self, "char_lexicon", lexicon)
        object.__setattr__(self, "char_specials", specials)
        if self.word_lexicon is None:
            if self.word_embedding_dim or self.word_specials:
                raise ValueError(
                    "`word_embedding_dim` / `word_specials` need a "
                    "`word_lexicon`; got word_lexicon=None."
                )
            return
        check_positive_int("word_embedding_dim", self.word_embedding_dim)
        words, word_specials = unicode_lexicon.check_lexicon(
            "word_lexicon",
            self.word_lexicon,
            self.word_specials or (),
            unicode_lexicon.WORD_SPECIALS,
            rows=self.word_vocab_size or None,
        )
        rows = self.word_vocab_size or 1 + max(
            [i for _, i in words] + list(word_specials)
        )
        object.__setattr__(self, "word_lexicon", words)
        object.__setattr__(self, "word_specials", word_specials)
        object.__setattr__(self, "word_vocab_size", int(rows))

    @property
    def has_char_lexicon(self):
        """True for a Unicode character table, False for UTF-8 bytes."""
        return self.char_lexicon is not None

    @property
    def has_word_branch(self):
        """True when token embeddings also use a word embedding."""
        return self.word_lexicon is not None

    @property
    def char_table_rows(self):
        """Rows of the char-CNN's table, with the "no token" row 0."""
        if self.char_lexicon is None:
            return char_vocab.NUM_CHARACTERS
        return self.n_characters

    @property
    def char_pad_id(self):
        """The shifted id of the padding character inside a token."""
        if self.char_lexicon is None:
            return char_vocab.PAD_CHAR + char_vocab.ID_OFFSET
        pad = self.char_specials[unicode_lexicon.CHAR_SPECIALS.index("pad")]
        return pad + char_vocab.ID_OFFSET

    @property
    def num_filters(self):
        """Total char-CNN output width, `sum(num_filters)`."""
        return sum(num for _, num in self.filters)

    @classmethod
    def from_options_json(cls, path_or_dict):
        """Reads a bilm-tf / AllenNLP options file (a path or its dict).

        Raises:
            FileNotFoundError: the file does not exist.
            ValueError: the file is not UTF-8 JSON, not a JSON object, a
                key is missing or has the wrong type, or a value is out of
                range; the message names the file and the key.
        """
        fields, source = options_json.read_options(path_or_dict)
        try:
            return cls(**fields)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from e

    def to_options_dict(self):
        """The bilm-tf options dict (the schema AllenNLP reads)."""
        return options_json.to_options(self)

    def to_options_json(self, path):
        """Writes the options file atomically (temp file + rename).

        A config with its own lexicons also writes them beside `path`
        (`char_lexicon.json`, `word_lexicon.json`; the options file names
        them, see `keras_elmo.config.options`).
        """
        if self.has_char_lexicon:
            folder = os.path.dirname(os.path.abspath(path))
            options_json.write_lexicons(self, folder)
            options = options_json.to_options(self, inline_lexicons=False)
        else:
            options = self.to_options_dict()
        options_json.write_options(options, path)

    def to_dict(self):
        """The fields as JSON types; the lexicon fields only when set, so
        a bilm-tf config's dict is what it always was."""
        result = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _LEXICON_FIELDS:
                if not value:
                    continue
                if f.name.endswith("_lexicon"):
                    value = [list(pair) for pair in value]
                elif f.name.endswith("_specials"):
                    value = list(value)
            elif f.name == "filters":
                value = [list(x) for x in value]
            result[f.name] = value
        return result

    @classmethod
    def from_architecture(cls, name):
        """A named architecture (random weights when built): tiny, small,
        medium, original, or a shape by AllenNLP's name for it
        (`NAMED_ARCHITECTURES`: `2x1024_128_2048cnn_1xhighway` is
        "small"; `2x1024_128_512cnn_1xhighway` the shipped
        elmo_small_en's). Trained models are `BiLM.from_preset`'s."""
        if name in NAMED_ARCHITECTURES:
            return NAMED_ARCHITECTURES[name]
        if name not in ARCHITECTURES:
            raise ValueError(
                "Received an invalid value for argument `name`, expected "
                f"one of the architectures {sorted(ARCHITECTURES)} or "
                f"{sorted(NAMED_ARCHITECTURES)}, got {name!r} (trained "
                "models by name: keras_elmo.BiLM.from_preset)."
            )
        return ARCHITECTURES[name]

    @classmethod
    def architectures(cls):
        """The short names `from_architecture` accepts (it also takes
        AllenNLP's names of the shapes, `NAMED_ARCHITECTURES`)."""
        return sorted(ARCHITECTURES)

    @classmethod
    def from_preset(cls, name):
        """Deprecated name of `from_architecture` (a "preset" is a trained
        model everywhere else: `BiLM.from_preset`)."""
        warnings.warn(
            "BiLMConfig.from_preset is deprecated; use "
            "BiLMConfig.from_architecture (the architecture alone) or "
            "BiLM.from_preset (a trained model).",
            DeprecationWarning,
            stacklevel=2,
        )
        return cls.from_architecture(name)


_LEXICON_FIELDS = (
    "char_lexicon",
    "char_specials",
    "word_lexicon",
    "word_specials",
    "word_embedding_dim",
    "word_vocab_size",
)

ARCHITECTURES = {
    # Tiny: for tests and demos (the AllenNLP reference harness's `tiny`).
    "tiny": BiLMConfig(
        filters=((1, 4), (2, 8), (3, 16)),
        char_embedding_dim=4,
        num_highway_layers=2,
        projection_dim=16,
        lstm_units=32,
    ),
    # elmo_2x1024_128_2048cnn_1xhighway
    "small": BiLMConfig(
        num_highway_layers=1, projection_dim=128, lstm_units=1024
    ),
    # elmo_2x2048_256_2048cnn_1xhighway
    "medium": BiLMConfig(
        num_highway_layers=1, projection_dim=256, lstm_units=2048
    ),
    # elmo_2x4096_512_2048cnn_2xhighway
    "original": BiLMConfig(),
}

# The same shapes by the names that say what they are (AllenNLP's,
# `{L}x{H}_{P}_{F}cnn_{k}xhighway`: L biLSTM layers of H units projected
# to P, F character filters in all, k highway layers), and the shipped
# elmo_small_en's, which shares "small"'s biLSTM but has 512 filters
# (widths 1-6) against 2048 (widths 1-7).
NAMED_ARCHITECTURES = {
    "2x1024_128_512cnn_1xhighway": BiLMConfig(
        filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 128), (6, 128)),
        num_highway_layers=1,
        projection_dim=128,
        lstm_units=1024,
    ),
    "2x1024_128_2048cnn_1xhighway": ARCHITECTURES["small"],
    "2x2048_256_2048cnn_1xhighway": ARCHITECTURES["medium"],
    "2x4096_512_2048cnn_2xhighway": ARCHITECTURES["original"],
}

PRESETS = ARCHITECTURES  # the old name, kept for compatibility
