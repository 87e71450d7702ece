"""bilm-tf / AllenNLP `options.json` <-> `keras_elmo.BiLMConfig` fields.

The schema is `{"lstm": {dim, projection_dim, n_layers, cell_clip,
proj_clip, use_skip_connections}, "char_cnn": {activation, filters,
n_highway, embedding: {dim}, n_characters, max_characters_per_token}}`;
`_OPTION_FIELDS` is the one table that names each option's `BiLMConfig`
field, section, converter and default. `BiLMConfig.from_options_json` and
`to_options_json` call these functions.
"""

import json
import os

from keras_elmo.config import options_lexicons
from keras_elmo.config import options_rules
from keras_elmo.text import char_vocab
from keras_elmo.utils.atomic import atomic_write


def read_options(path_or_dict):
    """`(fields, source)`: `BiLMConfig` keyword arguments from an options
    file (a path or its dict), and how error messages name it.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is not UTF-8 JSON, not a JSON object, or a
            key is missing, has the wrong type or a value out of range
            or past its size limit (`options_rules`); the message names
            the file, the key path as written in the file (`lstm.dim`),
            the value and what is allowed.
    """
    base_dir = None
    if isinstance(path_or_dict, (str, os.PathLike)):
        source = f"Options file {os.fspath(path_or_dict)!r}"
        options = _read_options_file(os.fspath(path_or_dict), source)
        base_dir = os.path.dirname(os.path.abspath(path_or_dict))
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
        fields, by_key, raw = {}, {}, {}
        for name, section, option, convert, default in _OPTION_FIELDS:
            key = f"{section}.{option}"
            values = lstm if section == "lstm" else cnn
            if option == "embedding.dim":
                value = _section(cnn, "embedding")["dim"]
            elif default is _REQUIRED:
                value = values[option]
            else:
                value = values.get(option, default)
            fields[name] = by_key[key] = convert(value)
            raw[key] = value
    except KeyError as e:
        raise ValueError(
            f"{source}: not a bilm-tf options file, missing or invalid "
            f"key {e} (missing key `{key}`); expected {{'lstm': {{'dim', "
            "'projection_dim', ...}, 'char_cnn': {'filters', "
            "'embedding': {'dim'}, ...}}."
        ) from e
    except (TypeError, ValueError) as e:
        raise ValueError(
            f"{source}: missing or invalid key `{key}`: {e}"
        ) from e
    lexicon_fields = options_lexicons.read_section(options, base_dir, source)
    if lexicon_fields:
        # A Unicode table's size is its own: BiLMConfig checks it.
        by_key.pop("char_cnn.n_characters")
        fields.update(lexicon_fields)
    options_rules.check_values(by_key, raw, source)
    options_rules.check_sizes(fields, source)
    options_rules.warn_unknown_keys(options, source)
    return fields, source


def to_options(config, inline_lexicons=True):
    """The bilm-tf options dict of a `BiLMConfig` (the schema AllenNLP
    reads), plus our `token_encoder` section for a model with its own
    lexicons (`options_lexicons`; inline lists, or file names with
    `inline_lexicons=False`)."""
    options = {
        "lstm": {
            "dim": config.lstm_units,
            "projection_dim": config.projection_dim,
            "n_layers": config.num_layers,
            "cell_clip": config.cell_clip,
            "proj_clip": config.projection_clip,
            "use_skip_connections": config.use_skip_connections,
        },
        "char_cnn": {
            "activation": config.activation,
            "filters": [list(f) for f in config.filters],
            "n_highway": config.num_highway_layers,
            "embedding": {"dim": config.char_embedding_dim},
            "n_characters": config.n_characters,
            "max_characters_per_token": config.max_characters_per_token,
        },
    }
    section = options_lexicons.section_of(config, inline_lexicons)
    if section is not None:
        options[options_lexicons.SECTION] = section
    return options


def write_options(options, path):
    """Writes an options dict as JSON, atomically (temp file + rename)."""
    text = json.dumps(options, indent=2) + "\n"
    with atomic_write(path, "w") as f:
        f.write(text)


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
