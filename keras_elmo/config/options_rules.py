"""What each `options.json` key allows, checked in the file's own words.

`BiLMConfig` validates its fields under their Keras names (`lstm_units`);
a user fixing an options file needs the key as it appears there
(`lstm.dim`), the value found and what is allowed. `check_values` runs
over the converted values of `options_json.read_options`, keyed by the
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
"""

import difflib
import logging
import math

from keras_elmo.text import char_vocab

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
