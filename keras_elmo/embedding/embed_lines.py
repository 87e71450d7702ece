"""How `keras-elmo embed` reads a line and what it writes for it.

One definition shared by the in-process command (`keras_elmo.cli.embed`)
and the Beam pipeline (`keras_elmo.integrations.beam`), so both give a line the
same tokens and the same output array:

- a line ends at `\\n` (nothing else ends it); its bytes are decoded as
  UTF-8 with `surrogateescape`, so a line that is not valid UTF-8 is kept
  and its tokens encode back to the exact input bytes;
- a UTF-8 byte-order mark at the start of a line is dropped (`BOM`);
- the sentence is the line stripped (`str.strip()`), the tokens its
  `str.split()` pieces (any Unicode whitespace separates them; a Windows
  `\r\n` line end is whitespace);
- a blank line has no tokens and gives an empty array (`(L + 1, 0, 2P)`
  or `(0, 2P)`), as `keras-elmo embed` writes it;
- `select_layers` picks what is stored from the `[L + 1, n, 2P]` layers:
  `all` keeps them, `top` the last biLSTM layer `h_L`, `average` the mean
  `(1 / (L + 1)) sum_j h_j` (the ELMo mix with equal weights, gamma 1).
"""

LAYER_MODES = ("all", "top", "average")
BOM = "\ufeff"  # a UTF-8 byte-order mark, dropped at the start of a line


def decode_line(raw):
    """`bytes` of one line -> str, invalid UTF-8 kept as surrogates."""
    return raw.decode("utf-8", "surrogateescape")


def is_utf8(raw):
    """Whether the bytes of a line are valid UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def sentence_text(line):
    """The sentence of a decoded line: BOM dropped, stripped."""
    return line.removeprefix(BOM).strip()


def sentence_tokens(line):
    """The tokens of a decoded line as the bytes the embedders take."""
    return [
        t.encode("utf-8", "surrogateescape")
        for t in line.removeprefix(BOM).split()
    ]


def select_layers(layers, mode):
    """`[L + 1, n, 2P]` -> what `mode` stores (see the module docstring)."""
    if mode == "all":
        return layers
    if mode == "top":
        return layers[-1]
    if mode == "average":
        return layers.mean(axis=0)
    check_layers(mode, name="mode")


def check_layers(layers, name="layers"):
    """Raises a `ValueError` unless `layers` is one of `LAYER_MODES`; the
    message names the argument `name`, the modes and the value received.
    The one check of every embedding entry point (the `Embedder`, the
    HDF5 writer, Beam and Spark)."""
    if layers not in LAYER_MODES:
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected one "
            f"of {LAYER_MODES}, got {layers!r}."
        )
