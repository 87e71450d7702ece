"""The counts check of a Spark embedding run: every line exactly once.

Before a run's output is declared done (its manifest written, or its
HDF5 file renamed into place), the embedded rows are counted against the
lines read: per file, no line number twice, `rows == lines`, and the
line numbers are `0 .. lines - 1` (so each line exactly once). A task
that ran twice and was committed twice, or a lost one, fails here
instead of passing silently.

The check reads the committed output back (`read_back`): only the small
columns (`file`, `line`, `tokens`, `shape`), so Parquet reads a fraction
of each file, and with Spark's default file splits (`READ_BACK_CONF`),
not the small ones a run sets to spread its input
(`spark.sql.files.maxPartitionBytes`, sized for text, not for vectors:
at 32 KiB, 2,000 embedded lines of `elmo_small_en --top`, 43 MB, were
read back as 1,342 tasks per job, 47 s of a 67 s run).

One aggregation with one shuffle gives every count. Lines are grouped by
`(file, bucket)`, a bucket being 32,768 consecutive line numbers
(Spark's `bitmap_bucket_number`); per group, `rows` (a count) and
`distinct` (the set bits of a 4 KiB bitmap of the lines' positions in
the bucket, `bitmap_construct_agg`, OR-ed across tasks). Lines of one
bucket with equal positions are equal, so for a file of `N` lines read:

    no line twice       <=>  rows == distinct in each of its groups
    each line once      <=>  no line twice, sum(rows) == N,
                             min(line) == 0 and max(line) == N - 1

(`N` distinct integers in `0 .. N - 1` are all of them). The driver
receives one small row per bucket of each file (31 rows for a million
lines). The check's session plans it as one job, adaptive execution
off and a shuffle partition per core (`spark.sql.shuffle.partitions`'s
default, 200, is 200 near-empty tasks here; adaptive execution ran it
as three jobs, 0.8-1.0 s of a 5.3 s run on 2,000 lines, against
0.3-0.4 s). A line found twice is then looked up for the error message.
"""

from keras_elmo.embedding.batching import check_layers

# Spark's own defaults (128 MiB splits, 4 MiB per file opened): a task
# per large slice of the output, whatever the run set for its input.
READ_BACK_CONF = (
    ("spark.sql.files.maxPartitionBytes", str(128 << 20)),
    ("spark.sql.files.openCostInBytes", str(4 << 20)),
    ("spark.sql.adaptive.enabled", "false"),
)


_SUMMED = ("rows", "tokens", "blank")
_LOWEST = ("first", "dim_min", "layers_min")
_HIGHEST = ("last", "dim_max", "layers_max")


def _per_file(per_bucket):
    """Per-bucket rows (`Row`s) -> one dict per file: sums, minima and
    maxima over the file's buckets."""
    files = {}
    for row in per_bucket:
        row = row.asDict()
        seen = files.get(row["file"])
        if seen is None:
            files[row["file"]] = row
            continue
        for key in _SUMMED:
            seen[key] = (seen[key] or 0) + (row[key] or 0)
        for key, pick in [(k, min) for k in _LOWEST] + [
            (k, max) for k in _HIGHEST
        ]:
            values = [v for v in (seen[key], row[key]) if v is not None]
            seen[key] = pick(values) if values else None
    return list(files.values())


class CountsMismatch(RuntimeError):
    """The embedded rows do not match the lines read."""


def read_back(spark, output, schema=None):
    """The Parquet dataset `output` as a DataFrame of the check's session:
    `spark.newSession()` (same cluster, its own SQL options, so the
    caller's session is unchanged) with `READ_BACK_CONF` and a shuffle
    partition per core. `schema` (a `StructType`, the written one) spares
    Spark a job reading a footer to infer it."""
    session = spark.newSession()
    for key, value in READ_BACK_CONF:
        session.conf.set(key, value)
    cores = max(1, int(spark.sparkContext.defaultParallelism))
    session.conf.set("spark.sql.shuffle.partitions", str(cores))
    reader = session.read if schema is None else session.read.schema(schema)
    return reader.parquet(output)


def _doubled_line(rows):
    """`(file, line, count)` of a line the output holds twice or more."""
    from pyspark.sql import functions as F

    row = (
        rows.groupBy("file", "line")
        .count()
        .where(F.col("count") > 1)
        .limit(1)
        .collect()[0]
    )
    return row["file"], row["line"], row["count"]


def check_counts(rows, totals, layers):
    """Checks `rows` (a DataFrame with `file`, `line`, `tokens`, `shape`)
    against `totals` (`{file: lines}`); returns the manifest's counts and
    the vector layout `{num_layers, dim}` (read from `shape`, so the
    driver never loads the model).

    Raises:
        CountsMismatch: naming the first file that does not match.
    """
    from pyspark.sql import functions as F

    check_layers(layers)
    per_bucket = (
        rows.groupBy("file", F.bitmap_bucket_number("line").alias("bucket"))
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.bitmap_count(
                F.bitmap_construct_agg(F.bitmap_bit_position("line"))
            ).alias("distinct"),
            F.min("line").alias("first"),
            F.max("line").alias("last"),
            F.sum(F.size("tokens")).alias("tokens"),
            F.sum((F.size("tokens") == 0).cast("long")).alias("blank"),
            F.min(F.element_at("shape", -1)).alias("dim_min"),
            F.max(F.element_at("shape", -1)).alias("dim_max"),
            F.min(F.element_at("shape", 1)).alias("layers_min"),
            F.max(F.element_at("shape", 1)).alias("layers_max"),
        )
        .collect()
    )
    if any(row["rows"] > row["distinct"] for row in per_bucket):
        file, line, count = _doubled_line(rows)
        raise CountsMismatch(
            f"{file}: line {line} is in the output {count} times; no "
            "manifest written."
        )
    per_file = _per_file(per_bucket)
    found = {row["file"]: row for row in per_file}
    for file in sorted(set(found) | set(totals)):
        expected = totals.get(file, 0)
        row = found.get(file)
        got = (0, None, None)
        if row is not None:
            got = (row["rows"], row["first"], row["last"])
        want = (expected, 0, expected - 1) if expected else (0, None, None)
        if got != want:
            raise CountsMismatch(
                f"{file}: {expected} lines read, but the output has "
                f"(rows, first line, last line) = {got}, expected "
                f"{want}; no manifest written."
            )
    dims = {(r["dim_min"], r["dim_max"]) for r in per_file}
    layouts = {(r["layers_min"], r["layers_max"]) for r in per_file}
    layout = {"num_layers": None, "dim": None}
    if per_file:
        (dim, dim_max), (low, high) = min(dims), min(layouts)
        mixed_layers = layers == "all" and (len(layouts) > 1 or low != high)
        if len(dims) > 1 or dim != dim_max or mixed_layers:
            raise CountsMismatch(f"Vectors of mixed shapes: {dims}, {layouts}")
        layout = {
            "num_layers": int(low) if layers == "all" else 1,
            "dim": int(dim),
        }
    counts = {
        "files": len(totals),
        "lines": int(sum(totals.values())),
        "tokens": int(sum(r["tokens"] or 0 for r in per_file)),
        "blank_lines": int(sum(r["blank"] or 0 for r in per_file)),
    }
    return counts, layout
