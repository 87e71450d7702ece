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

`compute_splits(spark)` sets, for the duration of an embedding run and
only where the session does not set them itself:

- `spark.sql.files.maxPartitionBytes` = `MAX_SPLIT_BYTES` (256 KiB, about
  2,300 lines of English prose: seconds of work per task for
  `elmo_small_en`, about a minute for the `original` model, on one CPU
  core), so a large corpus is cut into many tasks, each re-run cheaply
  after a lost executor;
- `spark.sql.files.openCostInBytes` = `OPEN_COST_BYTES` (8 KiB), so a
  file smaller than (cores x 256 KiB) is still spread over every core
  (`bytes_per_core` above wins).

A value the session already has (`--spark-conf`, `spark.conf.set`) is
kept; the session's values are restored when the run ends. A gzip file
cannot be split: it is one task whatever the sizes.
"""

import contextlib
import logging

logger = logging.getLogger(__name__)

MAX_SPLIT_BYTES = 256 << 10
OPEN_COST_BYTES = 8 << 10
SPLIT_CONF = (
    ("spark.sql.files.maxPartitionBytes", str(MAX_SPLIT_BYTES)),
    ("spark.sql.files.openCostInBytes", str(OPEN_COST_BYTES)),
)


@contextlib.contextmanager
def compute_splits(spark):
    """Within the block, `spark` (a SparkSession) plans file scans with
    `SPLIT_CONF` for each key it does not set itself; afterwards those
    keys are unset again. Yields the `{key: value}` it applied."""
    applied = {}
    for key, value in SPLIT_CONF:
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
