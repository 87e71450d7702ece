"""`BiLMConfig`: the biLM hyper-parameters, <-> bilm-tf `options.json`."""

import dataclasses
import json
import os

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab

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
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"Received an invalid value for argument `{name}`, "
                    f"expected a positive integer, got {value!r}."
                )
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
        if self.n_characters not in char_vocab.ACCEPTED_N_CHARACTERS:
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
        if isinstance(path_or_dict, (str, os.PathLike)):
            source = f"Options file {os.fspath(path_or_dict)!r}"
            options = _read_options_file(os.fspath(path_or_dict), source)
        elif isinstance(path_or_dict, dict):
            options, source = path_or_dict, "options dict"
        else:
            raise TypeError(
                "`path_or_dict` must be a path to options.json or a dict, "
                f"received {type(path_or_dict).__name__}."
            )
        if not isinstance(options, dict):
            raise ValueError(
                f"{source}: expected a JSON object {{'lstm': {{...}}, "
                f"'char_cnn': {{...}}}}, found {type(options).__name__}."
            )
        key = None
        try:
            key = "lstm"
            lstm = _section(options, "lstm")
            key = "char_cnn"
            cnn = _section(options, "char_cnn")
            fields = {}
            for name, section, option, convert, default in _OPTION_FIELDS:
                key = f"{section}.{option}"
                values = lstm if section == "lstm" else cnn
                if option == "embedding.dim":
                    value = _section(cnn, "embedding")["dim"]
                elif default is _REQUIRED:
                    value = values[option]
                else:
                    value = values.get(option, default)
                fields[name] = convert(value)
        except KeyError as e:
            raise ValueError(
                f"{source}: not a bilm-tf options file, missing or invalid "
                f"key {e} (in `{key}`); expected {{'lstm': {{'dim', "
                "'projection_dim', ...}, 'char_cnn': {'filters', "
                "'embedding': {'dim'}, ...}}."
            ) from e
        except (TypeError, ValueError) as e:
            raise ValueError(
                f"{source}: missing or invalid key `{key}`: {e}"
            ) from e
        try:
            return cls(**fields)
        except ValueError as e:
            raise ValueError(f"{source}: {e}") from e

    def to_options_dict(self):
        """The bilm-tf options dict (the schema AllenNLP reads)."""
        return {
            "lstm": {
                "dim": self.lstm_units,
                "projection_dim": self.projection_dim,
                "n_layers": self.num_layers,
                "cell_clip": self.cell_clip,
                "proj_clip": self.projection_clip,
                "use_skip_connections": self.use_skip_connections,
            },
            "char_cnn": {
                "activation": self.activation,
                "filters": [list(f) for f in self.filters],
                "n_highway": self.num_highway_layers,
                "embedding": {"dim": self.char_embedding_dim},
                "n_characters": self.n_characters,
                "max_characters_per_token": self.max_characters_per_token,
            },
        }

    def to_options_json(self, path):
        """Writes the options file atomically (temp file + rename)."""
        from keras_elmo.utils.atomic import atomic_write

        text = json.dumps(self.to_options_dict(), indent=2) + "\n"
        with atomic_write(path, "w") as f:
            f.write(text)

    def to_dict(self):
        return {
            f.name: (
                [list(x) for x in self.filters]
                if f.name == "filters"
                else getattr(self, f.name)
            )
            for f in dataclasses.fields(self)
        }

    @classmethod
    def from_preset(cls, name):
        """One of the named presets: tiny, small, medium, original."""
        if name not in PRESETS:
            raise ValueError(
                "Received an invalid value for argument `name`, expected "
                f"one of {sorted(PRESETS)}, got {name!r}."
            )
        return PRESETS[name]


def _optional_float(value):
    return None if value is None else float(value)


def _strict_int(value):
    """int(value) for ints and integral floats/strings; else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"expected an integer, found {value!r:.80}")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"expected an integer, found {value!r:.80}") from None
    if not number.is_integer():
        raise ValueError(f"expected an integer, found {value!r:.80}")
    return int(number)


def _filters(value):
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"expected a list of [width, num_filters] pairs, found "
            f"{value!r:.80}"
        )
    pairs = []
    for pair in value:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(
                f"expected [width, num_filters] pairs, found {pair!r:.80}"
            )
        pairs.append(tuple(_strict_int(v) for v in pair))
    return tuple(pairs)


def _bool(value):
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, found {value!r:.80}")
    return value


def _section(options, key):
    value = options[key]
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, found {value!r:.80}")
    return value


def _read_options_file(path, source):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{source} not found.")
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{source} is not UTF-8 JSON text ({e.reason} at byte {e.start})."
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source} is not valid JSON: {e}") from e


_REQUIRED = object()

# (field, section, option key, converter, default or _REQUIRED)
_OPTION_FIELDS = (
    ("filters", "char_cnn", "filters", _filters, _REQUIRED),
    ("char_embedding_dim", "char_cnn", "embedding.dim", _strict_int, None),
    ("num_highway_layers", "char_cnn", "n_highway", _strict_int, 0),
    ("activation", "char_cnn", "activation", str, "relu"),
    ("projection_dim", "lstm", "projection_dim", _strict_int, _REQUIRED),
    ("lstm_units", "lstm", "dim", _strict_int, _REQUIRED),
    ("num_layers", "lstm", "n_layers", _strict_int, 2),
    ("cell_clip", "lstm", "cell_clip", _optional_float, None),
    ("projection_clip", "lstm", "proj_clip", _optional_float, None),
    ("use_skip_connections", "lstm", "use_skip_connections", _bool, True),
    (
        "n_characters",
        "char_cnn",
        "n_characters",
        _strict_int,
        char_vocab.NUM_CHARACTERS,
    ),
    (
        "max_characters_per_token",
        "char_cnn",
        "max_characters_per_token",
        _strict_int,
        char_vocab.MAX_CHARS_PER_TOKEN,
    ),
)


PRESETS = {
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
