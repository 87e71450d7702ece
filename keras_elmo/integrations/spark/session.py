"""A classic `SparkSession` for embedding: a master URL and Spark options."""

import logging
import os
import sys

logger = logging.getLogger(__name__)


def spark_session(master, conf=()):
    """A classic (not Spark Connect) SparkSession on `master`.

    Args:
        master: str, `spark://host:port`, `yarn`, `k8s://...` or
            `local[N]`; a local master binds the driver to 127.0.0.1.
        conf: `(key, value)` pairs of Spark options, or a dict.

    The executors run `PYSPARK_PYTHON`, this interpreter when it is unset.
    """
    from pyspark.sql import SparkSession

    if "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        logger.info("PYSPARK_PYTHON not set; executors run %s", sys.executable)
    builder = SparkSession.builder.master(master).appName("keras-elmo embed")
    if master.startswith("spark://127.0.0.1") or master.startswith("local"):
        builder = builder.config("spark.driver.host", "127.0.0.1")
    for key, value in dict(conf).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
