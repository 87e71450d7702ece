"""Text files -> one row per line, numbered as `keras-elmo embed` numbers them.

Spark's text source (`lineSep="\\n"`: only `\\n` ends a line, as in the
in-process command; a `\\r` stays in its line and is whitespace) splits a
file into blocks read by different tasks, and does not number lines. The
hidden `_metadata` column says which file and block (`file_block_start`,
its byte offset) a row comes from, and a task reads its block's lines in
file order. So two passes give exact 0-based line numbers:

1. count the lines of every `(file, block)` (a JVM aggregation, no
   Python): a block's first line is the sum of the counts of the blocks
   before it in its file;
2. in each Python worker, number a block's rows from that first line in
   the order they arrive.

A re-run task (a lost executor) reads the same block again and numbers it
the same way. The value is kept as bytes (`binary`), so lines that are
not valid UTF-8 reach the embedder unchanged.
"""

import functools

import pyarrow as pa

from keras_elmo.embedding.batching import decode_line
from keras_elmo.embedding.batching import sentence_text


def lines_fields():
    """The `StructField`s of the numbered lines: file, line, sentence,
    text (the line's bytes)."""
    from pyspark.sql import types as T

    return [
        T.StructField("file", T.StringType()),
        T.StructField("line", T.LongType()),
        T.StructField("sentence", T.StringType()),
        T.StructField("text", T.BinaryType()),
    ]


def shown_sentence(raw):
    """The sentence of a line's bytes as `keras-elmo embed` strips it,
    bytes that are not UTF-8 shown as U+FFFD."""
    sentence = sentence_text(decode_line(raw))
    return sentence.encode("utf-8", "surrogateescape").decode(
        "utf-8", "replace"
    )


def number_lines(batches, first_lines):
    """`(text, file, block)` batches -> `(file, line, sentence, text)`."""
    seen = {}
    for batch in batches:
        files = batch.column("file").to_pylist()
        blocks = batch.column("block").to_pylist()
        texts = batch.column("text").to_pylist()
        lines = []
        for key in zip(files, blocks):
            count = seen.get(key, 0)
            lines.append(first_lines[key] + count)
            seen[key] = count + 1
        yield pa.RecordBatch.from_arrays(
            [
                batch.column("file"),
                pa.array(lines, pa.int64()),
                pa.array([shown_sentence(raw) for raw in texts], pa.string()),
                batch.column("text"),
            ],
            names=["file", "line", "sentence", "text"],
        )


def first_lines(block_counts):
    """`{(file, block_start): first line}` and `{file: lines}` from
    `(file, block_start, count)` triples (any order)."""
    first, totals = {}, {}
    for file, block, count in sorted(block_counts):
        first[(file, block)] = totals.get(file, 0)
        totals[file] = totals.get(file, 0) + count
    return first, totals


def read_lines(spark, path):
    """`(raw, numbering, totals)` for the file(s) `path` names (a path, a
    glob or a folder, on any file system Spark reads; `.gz` read as
    gzip): `raw`, a DataFrame `(text, file, block)` of every line;
    `numbering`, a function turning `raw`'s Arrow batches into batches
    of `lines_fields()` (`file, line, sentence, text`) in the Python worker;
    `totals`, `{file: line count}`.
    """
    from pyspark.sql import functions as F

    raw = spark.read.text(path, lineSep="\n").select(
        F.col("value").cast("binary").alias("text"),
        F.col("_metadata.file_path").alias("file"),
        F.col("_metadata.file_block_start").alias("block"),
    )
    counts = raw.groupBy("file", "block").count().collect()
    first, totals = first_lines(
        (row["file"], row["block"], row["count"]) for row in counts
    )
    return raw, functools.partial(number_lines, first_lines=first), totals
