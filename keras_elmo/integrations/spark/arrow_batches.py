"""The executor side of Spark embedding: Arrow batches in, vectors out.

`embed_record_batches` is the function `DataFrame.mapInArrow` runs in each
Python worker. It reads the text column of every row as `keras-elmo
embed` reads a line (`keras_elmo.embedding.batching`: UTF-8 with
`surrogateescape`, a byte-order mark dropped, `str.split()` tokens) and
adds, per row:

- `tokens`: array<string>. The tokens (bytes that are not UTF-8 shown as
  U+FFFD here; the vectors come from the original bytes);
- `shape`: array<int>. `(L + 1, m, 2P)` for `all` layers, `(m, 2P)` for
  `top` / `average`, `m = min(n, max_tokens)`;
- `vectors`: binary. The array, row-major, little-endian `float32` or
  `float16` (`np.frombuffer(v, "<f4").reshape(shape)`).

Length-aware batches, as the in-process command makes them: rows are
gathered into chunks of `chunk_batches * batch_size` (across Arrow
batches), each chunk is sorted by token count and cut into batches of
`batch_size`, so padding stays small; the rows come back in their input
order. The biLM is stateless, so a sentence's vectors do not depend on
its batch. The other columns pass through untouched (Arrow to Arrow).
"""

import numpy as np
import pyarrow as pa

from keras_elmo.embedding.batching import decode_line
from keras_elmo.embedding.batching import embed_in_length_order
from keras_elmo.embedding.batching import select_layers
from keras_elmo.embedding.batching import sentence_tokens

CHUNK_BATCHES = 16  # batches per chunk sorted by length, as `embed`
OUTPUT_FIELDS = (
    ("tokens", pa.list_(pa.string())),
    ("shape", pa.list_(pa.int32())),
    ("vectors", pa.binary()),
)
OUTPUT_DDL = "tokens array<string>, shape array<int>, vectors binary"
DTYPES = {"float32": "<f4", "float16": "<f2"}


def chunks(batches, size):
    """Re-cuts an iterator of `pa.RecordBatch` into tables of `size` rows
    (the last one shorter), in order."""
    pending, rows = [], 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        while rows >= size:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, size)
            rest = table.slice(size)
            pending, rows = rest.to_batches(), rest.num_rows
    if rows:
        yield pa.Table.from_batches(pending)


def row_tokens(raw, column):
    """The tokens (bytes) of one row's text, as `embed` reads a line."""
    if raw is None:
        raise ValueError(
            f"Column {column!r} holds a null; every row needs a sentence "
            "(an empty string embeds as a blank line)."
        )
    return sentence_tokens(decode_line(raw))


def embed_chunk(embedder, token_lists, batch_size, layers, dtype):
    """One stored array per token list, in order: batches of `batch_size`
    lists consecutive in length order."""
    return embed_in_length_order(
        embedder,
        token_lists,
        batch_size,
        each=lambda array: np.ascontiguousarray(
            select_layers(array, layers), dtype=DTYPES[dtype]
        ),
    )


def _shown(token):
    return token.decode("utf-8", "replace")


def embed_record_batches(
    batches, column, get_embedder, layers, batch_size, dtype
):
    """Yields the input rows with `tokens`, `shape`, `vectors` added.

    Args:
        batches: iterator of `pa.RecordBatch` (what `mapInArrow` passes).
        column: str. The text column (string or binary).
        get_embedder: callable `() -> embedder`, the process's model
            (`keras_elmo.integrations.spark.worker_model`).
        layers: str. `"all"`, `"top"` or `"average"`.
        batch_size: int. Sentences per model call.
        dtype: str. `"float32"` or `"float16"` (rounded from float32).
    """
    embedder = None
    for table in chunks(batches, batch_size * CHUNK_BATCHES):
        raws = table.column(column).cast(pa.binary()).to_pylist()
        token_lists = [row_tokens(raw, column) for raw in raws]
        if embedder is None:
            embedder = get_embedder()
        arrays = embed_chunk(embedder, token_lists, batch_size, layers, dtype)
        for start in range(0, table.num_rows, batch_size):
            stop = min(start + batch_size, table.num_rows)
            added = [
                [
                    [_shown(t) for t in tokens]
                    for tokens in token_lists[start:stop]
                ],
                [list(a.shape) for a in arrays[start:stop]],
                [a.tobytes() for a in arrays[start:stop]],
            ]
            part = table.slice(start, stop - start)
            columns = part.columns + [
                pa.array(values, type=kind)
                for values, (_, kind) in zip(added, OUTPUT_FIELDS)
            ]
            names = part.column_names + [name for name, _ in OUTPUT_FIELDS]
            for batch in pa.Table.from_arrays(columns, names).to_batches():
                yield batch
