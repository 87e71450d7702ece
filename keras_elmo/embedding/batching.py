"""Lines to tokens, tokens to length-ordered batches, layers to what is
stored: the steps every embedding path shares.

Lines.

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

Batches.

Every in-process embedding path (`Embedder.embed`, the HDF5 engine's
chunks, the Spark executors' Arrow chunks) batches the same way: the
lists' indices are sorted by token count (a stable sort: equal lengths
keep their input order), cut into consecutive batches of `batch_size`,
and each batch padded only to its own longest list. For `N` lists of
lengths `n_i` the model sees `sum_b |b| * max_{i in b} n_i` token slots
instead of `N * max_i n_i`. The biLM is stateless, so a list's vectors do
not depend on its batch up to float32 rounding (the matmul kernels round
a row by the call's row count: docs/EXACTNESS.md): the order changes the
speed, not the numbers beyond that.

`length_order_batches` is the one cutter: Beam's model handler uses it
with a padded-position budget as well (`batch_tokens`: a batch `b` stops
growing before `(|b| + 1) * max(longest, n) > batch_tokens`; a list
longer than the budget is a batch alone).
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


# How a distributed runner forms batches (`BiLMModelHandler(batching=)`,
# `keras-elmo embed --runner ... --batching`; kept here, free of Beam, so
# the command line can offer the choices without the `[beam]` extra):
# "bundles" sorts a bundle's sentences with `length_order_batches`;
# "length-keys" uses Beam's stateful length buckets.
BATCHINGS = ("bundles", "length-keys")


def length_order_batches(lengths, batch_size, batch_tokens=None, sort=True):
    """Index lists cutting `range(len(lengths))` into model calls.

    Args:
        lengths: sequence of int, token counts.
        batch_size: int, indices per batch at most.
        batch_tokens: optional int, padded positions per batch at most
            (`len(batch) * longest`); None: no budget.
        sort: bool. False keeps the input order (for comparisons only).

    Returns:
        A list of index lists, in the order they are to run (ascending
        length when `sort`; equal lengths keep their input order).
    """
    order = list(range(len(lengths)))
    if sort:
        order.sort(key=lambda i: lengths[i])
    batches, batch, longest = [], [], 0
    for i in order:
        n = lengths[i]
        full = len(batch) == batch_size
        over = (
            batch_tokens is not None
            and (len(batch) + 1) * max(longest, n) > batch_tokens
        )
        if batch and (full or over):
            batches.append(batch)
            batch, longest = [], 0
        batch.append(i)
        longest = max(longest, n)
    if batch:
        batches.append(batch)
    return batches


def embed_in_length_order(embed, token_lists, batch_size, each=None, sort=True):
    """`[each(vectors of token_lists[i])]`, in input order.

    Args:
        embed: `batch of token lists -> sequence of arrays`, one per list
            (an embedding runner).
        token_lists: list of token lists.
        batch_size: int, lists per `embed` call.
        each: optional `array -> stored value`, applied as each batch
            comes back (so only what is kept stays in memory).
        sort: bool. False keeps the input order (for comparisons only).

    Returns:
        A list as long as `token_lists`.
    """
    lengths = [len(tokens) for tokens in token_lists]
    out = [None] * len(token_lists)
    for rows in length_order_batches(lengths, batch_size, sort=sort):
        vectors = embed([token_lists[i] for i in rows])
        for i, array in zip(rows, vectors):
            out[i] = array if each is None else each(array)
    return out
