"""bilm-tf / AllenNLP `options.json` <-> `keras_elmo.BiLMConfig` fields, its
rules, and our lexicon extension.

The schema is `{"lstm": {dim, projection_dim, n_layers, cell_clip,
proj_clip, use_skip_connections}, "char_cnn": {activation, filters,
n_highway, embedding: {dim}, n_characters, max_characters_per_token}}`;
`_OPTION_FIELDS` is the one table that names each option's `BiLMConfig`
field, section, converter and default. `BiLMConfig.from_options_json` and
`to_options_json` call these functions.

Rules.

`BiLMConfig` validates its fields under their Keras names (`lstm_units`);
a user fixing an options file needs the key as it appears there
(`lstm.dim`), the value found and what is allowed. `check_values` runs
over the converted values of `read_options`, keyed by the
file's key paths, before `BiLMConfig` sees them; its rules are the ones
`BiLMConfig` and the layers enforce:

| key                               | allowed                         |
| --------------------------------- | ------------------------------- |
| `lstm.dim`, `lstm.projection_dim` | an integer >= 1                 |
| `lstm.n_layers`                   | an integer >= 1                 |
| `lstm.cell_clip`, `lstm.proj_clip`| null or a number > 0            |
| `char_cnn.embedding.dim`          | an integer >= 1                 |
| `char_cnn.n_highway`              | an integer >= 0                 |
| `char_cnn.activation`             | "relu" or "tanh"                |
| `char_cnn.filters`                | a non-empty list of [width, n], |
|                                   | 1 <= width <= 50, n >= 1        |
| `char_cnn.n_characters`           | 261 or 262                      |
| `char_cnn.max_characters_per_token` | 50                            |

Sizes are bounded too (`LIMITS`, `MAX_FILTERS`, `MAX_NUM_FILTERS`,
`MAX_PARAMETERS`), so an absurd file is refused in milliseconds instead
of allocating gigabytes. The largest published ELMo, `original` (also
the 5.5B-token model), has `lstm.dim` 4096, `lstm.projection_dim` 512,
`lstm.n_layers` 2, `char_cnn.n_highway` 2, `char_cnn.embedding.dim` 16
and 7 filters of at most 1024: 93.6M parameters. The limits leave a wide
margin over it:

| key                        | largest accepted | x original |
| -------------------------- | ---------------- | ---------- |
| `lstm.dim`                 | 65536            | 16         |
| `lstm.projection_dim`      | 16384            | 32         |
| `lstm.n_layers`            | 64               | 32         |
| `char_cnn.n_highway`       | 64               | 32         |
| `char_cnn.embedding.dim`   | 4096             | 256        |
| `char_cnn.filters`         | 64 entries       | 9          |
| `char_cnn.filters[i][1]`   | 65536            | 64         |
| word embedding dim         | 65536            | -          |
| parameters in all          | 1,000,000,000    | 10.7       |

(`check_sizes`; `BiLMConfig` applies the same limits under its own
argument names, so every source of a config is bounded.)

Keys of the `lstm` and `char_cnn` sections that no rule knows are logged
as a warning with the closest known key (a typo such as `n_layer` would
otherwise fall back to the default silently).

Lexicons.

A bilm-tf options file has no lexicon (characters are UTF-8 bytes). A
model with a Unicode character table and an optional word embedding
(converted from ELMoForManyLangs) adds one top-level section, which
bilm-tf and AllenNLP do not read (they cannot run such a model):

    "token_encoder": {
      "characters": "unicode_lexicon",
      "char_lexicon": "char_lexicon.json",       # beside options.json
      "char_specials": {"bow": 71, "eow": 70, "oov": 68, "pad": 69,
                        "bos": 66, "eos": 67},
      "word_lexicon": "word_lexicon.json",       # optional
      "word_specials": {"oov": 0, "pad": 3, "bos": 1, "eos": 2},
      "word_embedding_dim": 100,
      "word_vocab_size": 71000
    }

`char_cnn.n_characters` is then the character table's rows + 1. A
lexicon file is a UTF-8 JSON list of `[token, id]` pairs; an options
dict may also hold the lists inline. See docs/ELMOFORMANYLANGS.md.
"""

import difflib
import json
import logging
import math
import os

from keras_elmo.text import char_vocab
from keras_elmo.text import char_vocab as unicode_lexicon
from keras_elmo.utils.atomic import atomic_write

logger = logging.getLogger(__name__)


def _positive_int(value):
    return value >= 1


def _clip(value):
    return value is None or (math.isfinite(value) and value > 0)


_MAX_CHARS = char_vocab.MAX_CHARS_PER_TOKEN

# key path -> (predicate on the converted value, what is allowed)
RULES = {
    "lstm.dim": (_positive_int, "an integer >= 1 (the LSTM cell size)"),
    "lstm.projection_dim": (
        _positive_int,
        "an integer >= 1 (the projection and token embedding size)",
    ),
    "lstm.n_layers": (_positive_int, "an integer >= 1 (biLSTM layers)"),
    "lstm.cell_clip": (_clip, "null (no clipping) or a number > 0"),
    "lstm.proj_clip": (_clip, "null (no clipping) or a number > 0"),
    "char_cnn.embedding.dim": (
        lambda v: v is None or v >= 1,
        "an integer >= 1 (the character embedding size)",
    ),
    "char_cnn.n_highway": (lambda v: v >= 0, "an integer >= 0"),
    "char_cnn.activation": (
        lambda v: v in ("relu", "tanh"),
        '"relu" or "tanh"',
    ),
    "char_cnn.n_characters": (
        lambda v: v in char_vocab.ACCEPTED_N_CHARACTERS,
        " or ".join(str(n) for n in char_vocab.ACCEPTED_N_CHARACTERS)
        + " (261 in training files, 262 in inference files)",
    ),
    "char_cnn.max_characters_per_token": (
        lambda v: v == _MAX_CHARS,
        f"{_MAX_CHARS} (the character ids' fixed token width)",
    ),
}
KNOWN_KEYS = {
    "lstm": {
        "dim",
        "projection_dim",
        "n_layers",
        "cell_clip",
        "proj_clip",
        "use_skip_connections",
    },
    "char_cnn": {
        "activation",
        "filters",
        "n_highway",
        "embedding",
        "n_characters",
        "max_characters_per_token",
    },
}


def _found(raw, value):
    """How the message shows the value: as written in the file."""
    shown = raw if raw is not None else value
    return f"{shown!r:.80}"


def check_values(values, raw, source):
    """Raises a `ValueError` naming the first key whose value breaks its
    rule: `"<source>: `lstm.dim` is -4; expected an integer >= 1 ..."`.

    Args:
        values: dict key path -> converted value (`read_options`).
        raw: dict key path -> the value as found in the file.
        source: how the message names the file.
    """
    for key, (allowed, expected) in RULES.items():
        if key in values and not allowed(values[key]):
            raise ValueError(
                f"{source}: `{key}` is {_found(raw.get(key), values[key])}; "
                f"expected {expected}."
            )
    filters = values.get("char_cnn.filters")
    if filters is not None:
        _check_filters(filters, source)


def _check_filters(filters, source):
    if not filters:
        raise ValueError(
            f"{source}: `char_cnn.filters` is []; expected a non-empty list "
            "of [width, num_filters] pairs."
        )
    for i, (width, num) in enumerate(filters):
        if not 1 <= width <= _MAX_CHARS or num < 1:
            raise ValueError(
                f"{source}: `char_cnn.filters[{i}]` is {[width, num]}; "
                f"expected [width, num_filters] with 1 <= width <= "
                f"{_MAX_CHARS} and num_filters >= 1."
            )


# BiLMConfig field -> (options.json key, largest accepted value).
LIMITS = {
    "lstm_units": ("lstm.dim", 65536),
    "projection_dim": ("lstm.projection_dim", 16384),
    "num_layers": ("lstm.n_layers", 64),
    "num_highway_layers": ("char_cnn.n_highway", 64),
    "char_embedding_dim": ("char_cnn.embedding.dim", 4096),
    "word_embedding_dim": ("word embedding dim", 65536),
}
MAX_FILTERS = 64  # entries of `char_cnn.filters`
MAX_NUM_FILTERS = 65536  # `num_filters` of one entry
MAX_PARAMETERS = 1_000_000_000  # the biLM's, softmax excluded


def parameter_count(fields):
    """The biLM's parameters for `BiLMConfig` keyword arguments `fields`
    (missing ones take the bilm-tf defaults): character table, char-CNN,
    highway, word embedding, projection and both directions' LSTMs
    (`W_0 [2P, 4H]`, `B [4H]`, `W_P_0 [H, P]` per layer)."""
    d = fields.get("char_embedding_dim") or 0
    filters = fields.get("filters") or ()
    width = sum(n for _, n in filters)
    rows = max(fields.get("n_characters") or 0, char_vocab.NUM_CHARACTERS)
    word = (fields.get("word_vocab_size") or 0) * (
        fields.get("word_embedding_dim") or 0
    )
    p, h = fields.get("projection_dim", 1), fields.get("lstm_units", 1)
    cnn = sum(w * d * n + n for w, n in filters)
    highway = fields.get("num_highway_layers", 0) * 2 * (width * width + width)
    projection = (width + (fields.get("word_embedding_dim") or 0)) * p + p
    lstm = 2 * fields.get("num_layers", 2) * (2 * p * 4 * h + 4 * h + h * p)
    return rows * d + cnn + highway + word + projection + lstm


def check_sizes(fields, source=None):
    """Raises a `ValueError` if a dimension of `fields` (`BiLMConfig`
    keyword arguments, already >= 1) is past its limit or the biLM past
    `MAX_PARAMETERS` parameters. With `source` (how an options file is
    named), the message uses the file's keys; otherwise the argument
    names. Pure arithmetic: milliseconds for any value."""
    for name, (key, limit) in LIMITS.items():
        value = fields.get(name)
        if value is not None and value > limit:
            raise ValueError(
                _too_big(source, key, name, value, f"an integer <= {limit}")
            )
    filters = fields.get("filters") or ()
    _check_filter_count(filters, source)
    for i, (width, num) in enumerate(filters):
        if num > MAX_NUM_FILTERS:
            raise ValueError(
                _too_big(
                    source,
                    f"char_cnn.filters[{i}]",
                    "filters",
                    [width, num],
                    f"num_filters <= {MAX_NUM_FILTERS}",
                )
            )
    count = parameter_count(fields)
    if count > MAX_PARAMETERS:
        sizes = ", ".join(
            f"{LIMITS[name][0] if source else name}={fields[name]}"
            for name in ("lstm_units", "projection_dim", "num_layers")
            if name in fields
        )
        raise ValueError(
            f"{source or 'BiLMConfig'}: the architecture has {count:,} "
            f"parameters ({sizes}, {sum(n for _, n in filters)} filters); "
            f"at most {MAX_PARAMETERS:,} are accepted (the largest "
            "published ELMo has 93.6M)."
        )


def _too_big(source, key, name, value, expected):
    if source:
        return f"{source}: `{key}` is {value!r:.80}; expected {expected}."
    return (
        f"Received an invalid value for argument `{name}`, expected "
        f"{expected}, got {value!r:.80}."
    )


def warn_unknown_keys(options, source):
    """Logs a warning per unknown key of the `lstm` / `char_cnn` sections."""
    for section, known in KNOWN_KEYS.items():
        keys = options.get(section)
        if not isinstance(keys, dict):
            continue
        for key in sorted(set(keys) - known):
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean `{section}.{close[0]}`?)" if close else ""
            logger.warning(
                "%s: unknown key `%s.%s` is ignored%s.",
                source,
                section,
                key,
                hint,
            )


SECTION = "token_encoder"
CHAR_LEXICON_FILE = "char_lexicon.json"
WORD_LEXICON_FILE = "word_lexicon.json"


def read_section(options, base_dir, source):
    """`BiLMConfig` lexicon fields from `options["token_encoder"]`, or {}.

    Args:
        options: the options dict.
        base_dir: str or None, the folder of the options file (lexicon
            file names are relative to it).
        source: how messages name the file.
    """
    section = options.get(SECTION)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ValueError(
            f"{source}: `{SECTION}` must be a JSON object, found "
            f"{section!r:.80}."
        )
    if section.get("characters") != "unicode_lexicon":
        raise ValueError(
            f"{source}: `{SECTION}.characters` is "
            f"{section.get('characters')!r}; expected 'unicode_lexicon'."
        )
    fields = {
        "char_lexicon": _lexicon(section, "char_lexicon", base_dir, source),
        "char_specials": _specials(
            section, "char_specials", unicode_lexicon.CHAR_SPECIALS, source
        ),
    }
    if section.get("word_lexicon") is not None:
        fields["word_lexicon"] = _lexicon(
            section, "word_lexicon", base_dir, source
        )
        fields["word_specials"] = _specials(
            section, "word_specials", unicode_lexicon.WORD_SPECIALS, source
        )
        fields["word_embedding_dim"] = section.get("word_embedding_dim", 0)
        fields["word_vocab_size"] = section.get("word_vocab_size", 0)
    return fields


def _lexicon(section, key, base_dir, source):
    value = section.get(key)
    if isinstance(value, list):
        return tuple(tuple(pair) for pair in value)
    if not isinstance(value, str):
        raise ValueError(
            f"{source}: `{SECTION}.{key}` must be a file name or a list of "
            f"[token, id] pairs, found {value!r:.80}."
        )
    if not os.path.isabs(value):
        if base_dir is None:
            raise ValueError(
                f"{source}: `{SECTION}.{key}` names the file {value!r}, "
                "relative to an options file; pass the options file's "
                "path, not its dict."
            )
        value = os.path.join(base_dir, value)
    if not os.path.isfile(value):
        raise FileNotFoundError(
            f"{source}: lexicon file {value!r} (`{SECTION}.{key}`) not found."
        )
    try:
        with open(value, encoding="utf-8") as f:
            pairs = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(
            f"Lexicon file {value!r} is not UTF-8 JSON: {e}"
        ) from e
    if not isinstance(pairs, list):
        raise ValueError(
            f"Lexicon file {value!r}: expected a JSON list of [token, id] "
            f"pairs, found {type(pairs).__name__}."
        )
    return tuple(
        tuple(pair) if isinstance(pair, list) else pair for pair in pairs
    )


def _specials(section, key, names, source):
    value = section.get(key)
    if not isinstance(value, dict):
        raise ValueError(
            f"{source}: `{SECTION}.{key}` must be an object with ids for "
            f"{list(names)}, found {value!r:.80}."
        )
    return value


def section_of(config, inline=True):
    """The `token_encoder` section of a `BiLMConfig`, or None (bytes).

    `inline=True` holds the lexicons as lists (a self-contained dict);
    `inline=False` names the files `write_lexicons` writes.
    """
    if not config.has_char_lexicon:
        return None
    section = {
        "characters": "unicode_lexicon",
        "char_lexicon": (
            [list(p) for p in config.char_lexicon]
            if inline
            else CHAR_LEXICON_FILE
        ),
        "char_specials": unicode_lexicon.specials_dict(
            config.char_specials, unicode_lexicon.CHAR_SPECIALS
        ),
    }
    if config.has_word_branch:
        section["word_lexicon"] = (
            [list(p) for p in config.word_lexicon]
            if inline
            else WORD_LEXICON_FILE
        )
        section["word_specials"] = unicode_lexicon.specials_dict(
            config.word_specials, unicode_lexicon.WORD_SPECIALS
        )
        section["word_embedding_dim"] = config.word_embedding_dim
        section["word_vocab_size"] = config.word_vocab_size
    return section


def write_lexicons(config, folder):
    """Writes the lexicon files of `config` into `folder` (atomically)."""
    files = [(CHAR_LEXICON_FILE, config.char_lexicon)]
    if config.has_word_branch:
        files.append((WORD_LEXICON_FILE, config.word_lexicon))
    for name, pairs in files:
        text = json.dumps([list(p) for p in pairs], ensure_ascii=False)
        with atomic_write(os.path.join(folder, name), "w") as f:
            f.write(text + "\n")


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
    _refuse_long_filters(options, source)
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
    lexicon_fields = read_section(options, base_dir, source)
    if lexicon_fields:
        # A Unicode table's size is its own: BiLMConfig checks it.
        by_key.pop("char_cnn.n_characters")
        fields.update(lexicon_fields)
    check_values(by_key, raw, source)
    check_sizes(fields, source)
    warn_unknown_keys(options, source)
    return fields, source


def _refuse_long_filters(options, source):
    """Refuses a `char_cnn.filters` list past `MAX_FILTERS` entries before
    a single entry is converted: its length alone decides."""
    cnn = options.get("char_cnn")
    filters = cnn.get("filters") if isinstance(cnn, dict) else None
    if isinstance(filters, (list, tuple)):
        _check_filter_count(filters, source)


def _check_filter_count(filters, source):
    if len(filters) > MAX_FILTERS:
        raise ValueError(
            _too_big(
                source,
                "char_cnn.filters",
                "filters",
                f"a list of {len(filters)} pairs",
                f"at most {MAX_FILTERS} [width, num_filters] pairs",
            )
        )


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
    section = section_of(config, inline_lexicons)
    if section is not None:
        options[SECTION] = section
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
