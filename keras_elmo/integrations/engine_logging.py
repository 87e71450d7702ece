"""How loud Beam and Spark are, and how their failures read.

Their own lines are kept out unless verbose; a failure is told by its
cause in one line (`engine_failures`).

Apache Beam logs through Python's `logging` (its `apache_beam.*` loggers,
and some module code on the root logger itself, e.g. a "Resource module
is not available" warning per inference batch); PySpark's Python side
through `pyspark.*` and `py4j.*`. `quiet_engine_logs()` keeps their
records out of the process's log unless `verbose` (on the root logger,
those below ERROR), so that a run redirected to a file holds the
command's own lines. The JVM side of
Spark (log4j) is set by `keras_elmo.integrations.spark.session`.
"""

import contextlib
import logging
import os
import re

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
    """Beam's and Spark's Python loggers at CRITICAL, unless `verbose`
    (then at the level the root logger has), and their records on the
    root logger below ERROR dropped. A failure reaches the caller as its
    exception (`engine_failures` tells it in one line), not as the
    engine's ERROR record with a page of traceback. Idempotent.

    Args:
        verbose: bool. Keep the engines' INFO and WARNING records.
    """
    level = logging.NOTSET if verbose else logging.CRITICAL
    for package in ENGINE_PACKAGES:
        logging.getLogger(package).setLevel(level)
    root = logging.getLogger()
    for old in [f for f in root.filters if isinstance(f, _EngineRecordsBelow)]:
        root.removeFilter(old)
    if not verbose:
        root.addFilter(_EngineRecordsBelow(logging.ERROR))


class EngineFailed(RuntimeError):
    """A Beam pipeline or a Spark job failed; the message is the engine's
    own cause, one line (`engine_cause`), and `__cause__` the error."""


# The last line of a Python traceback: `pkg.module.SomeError: message`.
_EXCEPTION_LINE = re.compile(r"^([\w.]+(?:Error|Exception|Exit)\b.*)$", re.M)


def engine_cause(error):
    """The one line that says why an engine failed.

    - a Java exception (PySpark's `Py4JJavaError`): its innermost cause,
      and where that is a Python worker's error (`PythonException`), the
      last line of the worker's traceback (`ModuleNotFoundError: No module
      named 'keras_elmo'`);
    - a message that holds a traceback (Beam's workers): its last
      exception line, with Beam's `[while running 'STEP']`;
    - anything else: the first line of its message.
    """
    text = str(error)
    java = getattr(error, "java_exception", None)
    if java is not None:
        try:
            while java.getCause() is not None:
                java = java.getCause()
            text = str(java.toString())
        except Exception:  # a gateway already gone: the Python text
            pass
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    if "Traceback (most recent call last)" in text:
        found = _EXCEPTION_LINE.findall(text)
        if found:
            step = re.search(r"\[while running '[^']*'\]", text)
            cause = found[-1].strip()
            if step and step.group(0) not in cause:
                cause += " " + step.group(0)
            return cause
    return lines[0]


@contextlib.contextmanager
def engine_failures(engine):
    """Raises an engine's failure inside as `EngineFailed("ENGINE failed:
    CAUSE")` (`engine_cause`), so that it is told by its cause in one
    line. keras_elmo's own refusals (`ValueError`, `OSError`, `TypeError`,
    `ImportError` whose message holds no worker's traceback) pass
    unchanged."""
    try:
        yield
    except (ValueError, OSError, TypeError, ImportError) as e:
        if "Traceback (most recent call last)" not in str(e):
            raise
        raise EngineFailed(f"{engine} failed: {engine_cause(e)}") from e
    except EngineFailed:
        raise
    except Exception as e:
        raise EngineFailed(f"{engine} failed: {engine_cause(e)}") from e
