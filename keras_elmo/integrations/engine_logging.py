"""How loud Beam and Spark are: their own lines at ERROR unless verbose.

Apache Beam logs through Python's `logging` (its `apache_beam.*` loggers,
and some module code on the root logger itself, e.g. a "Resource module
is not available" warning per inference batch); PySpark's Python side
through `pyspark.*` and `py4j.*`. `quiet_engine_logs()` keeps their
records below ERROR out of the process's log unless `verbose`, so that a
run redirected to a file holds the command's own lines. The JVM side of
Spark (log4j) is set by `keras_elmo.integrations.spark.session`.
"""

import logging
import os

# Python packages whose records are the engines' own.
ENGINE_PACKAGES = ("apache_beam", "pyspark", "py4j")


class _EngineRecordsBelow(logging.Filter):
    """Drops records below `level` that the engines' code logs on the
    root logger (`logging.warning(...)` in a Beam module)."""

    def __init__(self, level):
        super().__init__()
        self.level = level

    def filter(self, record):
        if record.levelno >= self.level:
            return True
        parts = os.path.normpath(record.pathname or "").split(os.sep)
        return not any(package in parts for package in ENGINE_PACKAGES)


def quiet_engine_logs(verbose=False):
    """Beam's and Spark's Python loggers at ERROR, unless `verbose`
    (then at the level the root logger has). Idempotent.

    Args:
        verbose: bool. Keep the engines' INFO and WARNING records.
    """
    level = logging.NOTSET if verbose else logging.ERROR
    for package in ENGINE_PACKAGES:
        logging.getLogger(package).setLevel(level)
    root = logging.getLogger()
    for old in [f for f in root.filters if isinstance(f, _EngineRecordsBelow)]:
        root.removeFilter(old)
    if not verbose:
        root.addFilter(_EngineRecordsBelow(logging.ERROR))
