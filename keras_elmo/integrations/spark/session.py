"""A classic `SparkSession` for embedding: a master URL and Spark options."""

import logging
import os
import sys

from keras_elmo.integrations.engine_logging import quiet_engine_logs

logger = logging.getLogger(__name__)


# The driver's log4j2 configuration when quiet: ERROR and up, to stderr.
QUIET_LOG4J2 = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties"
)


def quiet_conf(conf=()):
    """`conf` with Spark's console quiet: the driver's log4j at ERROR
    (`QUIET_LOG4J2`; no start-up WARN lines) and no stage progress bar,
    where `conf` does not set these keys itself (its values win)."""
    quiet = {
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": (
            f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J2}"
        ),
    }
    quiet.update(dict(conf))
    return quiet


def spark_session(master, conf=(), quiet=False):
    """A classic (not Spark Connect) SparkSession on `master`.

    Args:
        master: str, `spark://host:port`, `yarn`, `k8s://...` or
            `local[N]`; a local master binds the driver to 127.0.0.1.
        conf: `(key, value)` pairs of Spark options, or a dict.
        quiet: bool. Spark's own log lines at ERROR: `quiet_conf` for the
            JVM, `sc.setLogLevel("ERROR")` once it runs, and PySpark's
            and py4j's Python loggers at ERROR
            (`keras_elmo.integrations.engine_logging`).

    The executors run `PYSPARK_PYTHON`, this interpreter when it is unset.
    """
    from pyspark.sql import SparkSession

    if quiet:
        quiet_engine_logs()
        conf = quiet_conf(conf)

    if "PYSPARK_PYTHON" not in os.environ:
        os.environ["PYSPARK_PYTHON"] = sys.executable
        logger.info("PYSPARK_PYTHON not set; executors run %s", sys.executable)
    builder = SparkSession.builder.master(master).appName("keras-elmo embed")
    if master.startswith("spark://127.0.0.1") or master.startswith("local"):
        builder = builder.config("spark.driver.host", "127.0.0.1")
    for key, value in dict(conf).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    return spark
