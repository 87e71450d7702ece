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
read back as 1,342 tasks per job, 47 s of a 67 s run). One aggregation
(per line, then per file) gives every count in one job.
"""

from keras_elmo.export.embed_lines import LAYER_MODES

# Spark's own defaults (128 MiB splits, 4 MiB per file opened): a task
# per large slice of the output, whatever the run set for its input.
READ_BACK_CONF = (
    ("spark.sql.files.maxPartitionBytes", str(128 << 20)),
    ("spark.sql.files.openCostInBytes", str(4 << 20)),
)


class CountsMismatch(RuntimeError):
    """The embedded rows do not match the lines read."""


def read_back(spark, output):
    """The Parquet dataset `output` as a DataFrame of the check's session:
    `spark.newSession()` (same cluster, its own SQL options, so the
    caller's session is unchanged) with `READ_BACK_CONF`."""
    session = spark.newSession()
    for key, value in READ_BACK_CONF:
        session.conf.set(key, value)
    return session.read.parquet(output)


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

    if layers not in LAYER_MODES:
        raise ValueError(f"Unknown layers {layers!r}.")
    per_line = rows.groupBy("file", "line").agg(
        F.count(F.lit(1)).alias("copies"),
        F.sum(F.size("tokens")).alias("tokens"),
        F.sum((F.size("tokens") == 0).cast("long")).alias("blank"),
        F.min(F.element_at("shape", -1)).alias("dim_min"),
        F.max(F.element_at("shape", -1)).alias("dim_max"),
        F.min(F.element_at("shape", 1)).alias("layers_min"),
        F.max(F.element_at("shape", 1)).alias("layers_max"),
    )
    per_file = (
        per_line.groupBy("file")
        .agg(
            F.sum("copies").alias("rows"),
            F.max("copies").alias("most_copies"),
            F.min("line").alias("first"),
            F.max("line").alias("last"),
            F.sum("tokens").alias("tokens"),
            F.sum("blank").alias("blank"),
            F.min("dim_min").alias("dim_min"),
            F.max("dim_max").alias("dim_max"),
            F.min("layers_min").alias("layers_min"),
            F.max("layers_max").alias("layers_max"),
        )
        .collect()
    )
    if any(row["most_copies"] > 1 for row in per_file):
        file, line, count = _doubled_line(rows)
        raise CountsMismatch(
            f"{file}: line {line} is in the output {count} times; no "
            "manifest written."
        )
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
