"""Input splits sized for ELMo's compute, not for reading.

Spark cuts text files into splits for its tasks by bytes (per file
source scan, `FilePartition.maxSplitBytes`):

    split = min(maxPartitionBytes, max(openCostInBytes, bytes_per_core))
    bytes_per_core = (total bytes + files * openCostInBytes) / minPartitionNum

with `minPartitionNum` the default parallelism (the cluster's cores) and
Spark's defaults `maxPartitionBytes` = 128 MiB, `openCostInBytes` =
4 MiB, tuned for scans that cost little per byte. ELMo costs about
10^4 times more per byte than reading: a 230 KB file (2,000 lines) is one
task on one core under those defaults, however many cores the cluster
has, and a 1 GB corpus gets 8 tasks.

`compute_splits(spark, file_sizes)` sets, for the duration of an
embedding run and only where the session does not set them itself:

- `spark.sql.files.openCostInBytes` = `OPEN_COST_BYTES` (8 KiB), so a
  file smaller than (cores x 256 KiB) is still spread over every core;
- `spark.sql.files.maxPartitionBytes` = `split_bytes(file_sizes, cores)`:
  the input's bytes `T` (each file's size plus the open cost) cut into
  `w * cores` equal splits, `w = ceil(T / (cores * MAX_SPLIT_BYTES))`
  waves of at most `MAX_SPLIT_BYTES` (256 KiB, about 2,300 lines of
  English prose: seconds of work per task for `elmo_small_en`, about a
  minute for the `original` model, on one CPU core). Every wave keeps
  every core busy: 1.15 MB on 2 cores is 6 splits of 193 KB, where
  fixed 256 KiB splits gave 5, the fifth running alone on one core while
  the other idled (a sixth of the run). Without `file_sizes` the split
  is `MAX_SPLIT_BYTES`.

A value the session already has (`--spark-conf`, `spark.conf.set`) is
kept; the session's values are restored when the run ends. A gzip file
cannot be split: it is one task whatever the sizes.
"""

import contextlib
import logging

logger = logging.getLogger(__name__)

MAX_SPLIT_BYTES = 256 << 10
OPEN_COST_BYTES = 8 << 10
MAX_PARTITION_KEY = "spark.sql.files.maxPartitionBytes"
OPEN_COST_KEY = "spark.sql.files.openCostInBytes"
SPLIT_CONF = (
    (MAX_PARTITION_KEY, str(MAX_SPLIT_BYTES)),
    (OPEN_COST_KEY, str(OPEN_COST_BYTES)),
)


def split_bytes(file_sizes, cores):
    """The split size that cuts files of `file_sizes` bytes into whole
    waves of `cores` splits of at most `MAX_SPLIT_BYTES`.

    With `T = sum(size + OPEN_COST_BYTES)` (what Spark packs),
    `w = ceil(T / (cores * MAX_SPLIT_BYTES))` waves and
    `split = ceil(T / (w * cores))`: one file is cut into
    `ceil(size / split) <= w * cores` splits, `w * cores` of them unless
    the file is under `(w * cores - 1) * OPEN_COST_BYTES`. Empty or
    unknown sizes give `MAX_SPLIT_BYTES`.
    """
    sizes = [int(size) for size in file_sizes]
    if not sizes or cores < 1:
        return MAX_SPLIT_BYTES
    total = sum(sizes) + len(sizes) * OPEN_COST_BYTES
    waves = max(1, -(-total // (cores * MAX_SPLIT_BYTES)))
    return max(OPEN_COST_BYTES, -(-total // (waves * cores)))


def _cores(spark):
    """What Spark divides a scan's bytes by (`minPartitionNum`, else the
    default parallelism: the cluster's cores)."""
    value = spark.conf.get("spark.sql.files.minPartitionNum", None)
    if value:
        return int(value)
    return int(spark.sparkContext.defaultParallelism)


@contextlib.contextmanager
def compute_splits(spark, file_sizes=()):
    """Within the block, `spark` (a SparkSession) plans file scans with
    splits sized by `split_bytes(file_sizes, cores)` and the small open
    cost, for each key it does not set itself; afterwards those keys are
    unset again. Yields the `{key: value}` it applied.

    Args:
        spark: a `pyspark.sql.SparkSession`.
        file_sizes: iterable of int. The input files' sizes in bytes
            (the run record lists them); empty: `MAX_SPLIT_BYTES` splits.
    """
    wanted = {
        MAX_PARTITION_KEY: str(split_bytes(file_sizes, _cores(spark))),
        OPEN_COST_KEY: str(OPEN_COST_BYTES),
    }
    applied = {}
    for key, value in wanted.items():
        if spark.conf.get(key, None) is None:
            spark.conf.set(key, value)
            applied[key] = value
    if applied:
        logger.info("Input splits sized for embedding: %s", applied)
    try:
        yield applied
    finally:
        for key in applied:
            spark.conf.unset(key)
