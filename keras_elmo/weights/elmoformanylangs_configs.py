"""ELMoForManyLangs architecture JSONs: the two the package ships, the
limits every architecture is checked against, its parameter count.

Published model folders name their architecture by `config_path`, an
absolute path on the authors' machine (e.g. `/users4/.../configs/
cnn_50_100_512_4096_sample.json`) that is not in the folder; the package
then falls back to its own `elmoformanylangs/configs/` by basename. These
are those files' contents, verbatim in meaning (both files are identical
in 0.0.4.post2), so a folder converts without the package installed.

`architecture_dims` checks an architecture's sizes before anything is
sized from them: integers (not booleans) between a floor (1, or 0 for
`n_highway` and `word_dim`) and `ARCHITECTURE_LIMITS`, a wide margin (8
to 20 times) past the largest published ELMo, the shipped
`cnn_50_100_512_4096` (dim 4096, projection 512, 2 layers, 2 highway
layers, filter widths up to 7 with up to 1024 filters, 2048 in all,
char_dim 50, word_dim 100). A refusal names the file and the key as the
file spells it (`encoder.dim`, `token_embedder.filters[2]`).
`expected_parameters` is the package model's exact parameter count.
"""

_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]

_CNN_50_100_512_4096 = {
    "encoder": {
        "name": "elmo",
        "projection_dim": 512,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 4096,
        "n_layers": 2,
    },
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": _FILTERS,
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "max_characters_per_token": 50,
    },
    "classifier": {"name": "sampled_softmax", "n_samples": 8192},
    "dropout": 0.1,
}

KNOWN_ARCHITECTURES = {
    "cnn_50_100_512_4096_sample.json": _CNN_50_100_512_4096,
    "cnn_0_100_512_4096_sample.json": _CNN_50_100_512_4096,
}

# `section.key` -> (floor, limit): see the module docstring.
ARCHITECTURE_LIMITS = {
    "encoder.projection_dim": (1, 8192),
    "encoder.dim": (1, 32768),
    "encoder.n_layers": (1, 16),
    "token_embedder.n_highway": (0, 16),
    "token_embedder.char_dim": (1, 1024),
    "token_embedder.word_dim": (0, 4096),
}
FILTER_WIDTH_LIMIT = 50  # a wider filter never fits a 50-slot token
FILTER_COUNT_LIMIT = 16384  # filters of one width (published: 1024)
TOTAL_FILTERS_LIMIT = 32768  # all widths together (published: 2048)
FILTER_WIDTHS_LIMIT = 64  # entries in `filters` (published: 7)


class ELMoForManyLangsFileError(ValueError):
    """A file of an ELMoForManyLangs folder holds something this reader
    refuses. Attributes: `path`, the file; `key`, the key as the file
    spells it (or None); `line`, the 1-based line (or None)."""

    def __init__(self, message, path, key=None, line=None):
        super().__init__(message)
        self.path = path
        self.key = key
        self.line = line


def architecture_dims(architecture, source):
    """The architecture's sizes, checked against `ARCHITECTURE_LIMITS`:
    `{projection_dim, dim, n_layers, n_highway, char_dim, word_dim,
    filters}` (keys as the file spells them), `filters` a tuple of
    `(width, count)`.

    Raises:
        ELMoForManyLangsFileError: naming `source` and the key.
    """

    def refuse(key, found, expected):
        raise ELMoForManyLangsFileError(
            f"ELMoForManyLangs architecture {source!r}: `{key}` is "
            f"{found!r:.80}; expected {expected}.",
            source,
            key,
        )

    sections = {}
    for name in ("encoder", "token_embedder"):
        section = architecture.get(name)
        if not isinstance(section, dict):
            refuse(name, section, "a JSON object")
        sections[name] = section

    def integer(key, floor, limit, default=None):
        name, field = key.split(".")
        value = sections[name].get(field, default)
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or not floor <= value <= limit
        ):
            refuse(key, value, f"an integer from {floor} to {limit}")
        return value

    dims = {}
    for key, (floor, limit) in ARCHITECTURE_LIMITS.items():
        default = 0 if key == "token_embedder.word_dim" else None
        dims[key.split(".")[1]] = integer(key, floor, limit, default)
    filters = sections["token_embedder"].get("filters")
    if (
        not isinstance(filters, list)
        or not 1 <= len(filters) <= FILTER_WIDTHS_LIMIT
    ):
        refuse(
            "token_embedder.filters",
            filters,
            f"a list of 1 to {FILTER_WIDTHS_LIMIT} [width, count] pairs",
        )
    pairs = []
    for k, pair in enumerate(filters):
        key = f"token_embedder.filters[{k}]"
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in pair
            )
            or not 1 <= pair[0] <= FILTER_WIDTH_LIMIT
            or not 1 <= pair[1] <= FILTER_COUNT_LIMIT
        ):
            refuse(
                key,
                pair,
                f"[width, count] with a width from 1 to "
                f"{FILTER_WIDTH_LIMIT} and a count from 1 to "
                f"{FILTER_COUNT_LIMIT}",
            )
        pairs.append(tuple(pair))
    total = sum(count for _, count in pairs)
    if total > TOTAL_FILTERS_LIMIT:
        refuse(
            "token_embedder.filters",
            f"{total} filters in all",
            f"at most {TOTAL_FILTERS_LIMIT}",
        )
    dims["filters"] = tuple(pairs)
    return dims


def expected_parameters(dims, char_rows, word_rows):
    """`(token_embedder, encoder)` parameter counts of the package's model
    with `dims` (`architecture_dims`) and embedding tables of `char_rows`
    and `word_rows` rows (the package's tables have one row per lexicon
    entry)."""
    c, w = dims["char_dim"], dims["word_dim"]
    p, h = dims["projection_dim"], dims["dim"]
    f = sum(count for _, count in dims["filters"])
    token_embedder = (
        char_rows * c
        + (word_rows * w if w > 0 else 0)
        + sum(n * c * width + n for width, n in dims["filters"])
        + dims["n_highway"] * (2 * f * f + 2 * f)
        + p * (w + f)
        + p
    )
    # per layer and direction: input and state linearities [4H, P], the
    # state bias [4H], the state projection [P, H]
    encoder = dims["n_layers"] * 2 * (2 * 4 * h * p + 4 * h + p * h)
    return token_embedder, encoder
