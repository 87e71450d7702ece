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
