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

    Raises:
        ConnectionError: a `spark://` master none of whose hosts accepts
            a connection (`check_master`), before the JVM starts.
    """
    from pyspark.sql import SparkSession

    check_master(master)
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


def check_master(master, timeout=5.0):
    """Raises `ConnectionError` naming the master and the reason when no
    host of a standalone master URL (`spark://host:port[,host:port]`)
    accepts a TCP connection within `timeout` seconds. Spark itself
    retries for a minute and then reports "All masters are unresponsive"
    among a page of JVM lines; other masters (`local[N]`, `yarn`,
    `k8s://...`) are not probed."""
    import socket

    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master[len("spark://") :].split(","):
        host, _, port = address.rpartition(":")
        try:
            port = int(port)
        except ValueError:
            raise ValueError(
                f"Received an invalid Spark master {master!r}, expected "
                "spark://HOST:PORT[,HOST:PORT...] (port 7077 by default)."
            ) from None
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return
        except OSError as e:
            reasons.append(f"{host}:{port}: {e.strerror or e}")
    raise ConnectionError(
        f"Spark master {master!r} does not answer ({'; '.join(reasons)}); "
        "expected a running standalone master at that address (started "
        "with Spark's sbin/start-master.sh), or use local[N] to run on "
        "this machine with N cores."
    )


def use_this_python(spark):
    """Makes the executors of `spark`'s new Python functions run this
    interpreter where the session names none (neither `PYSPARK_PYTHON`
    nor `spark.pyspark.python`: PySpark then runs the `python3` on each
    executor's PATH, which may not have keras_elmo), as the command
    line's session does (`spark_session`). A Python the user named is
    kept. PySpark reads `SparkContext.pythonExec` when it wraps each
    function, so this holds for the functions built after it."""
    context = spark.sparkContext
    named = os.environ.get("PYSPARK_PYTHON") or context.getConf().get(
        "spark.pyspark.python", None
    )
    if named or context.pythonExec != "python3":
        return
    context.pythonExec = sys.executable
    logger.info(
        "Neither PYSPARK_PYTHON nor spark.pyspark.python is set; the "
        "executors run %s",
        sys.executable,
    )
