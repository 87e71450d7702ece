"""An engine's failure told by its cause, first and in one line; the
Python the Spark API's executors run; the model named in Spark's
manifest as in Beam's."""

import logging
import sys

import pytest

from keras_elmo.cli.main import main
from keras_elmo.integrations.engine_logging import EngineFailed
from keras_elmo.integrations.engine_logging import engine_cause
from keras_elmo.integrations.engine_logging import engine_failures
from keras_elmo.integrations.engine_logging import quiet_engine_logs

BEAM_MESSAGE = (
    "Traceback (most recent call last):\n"
    '  File "apache_beam/runners/common.py", line 1576, in _invoke\n'
    "    self._model = self._load_model()\n"
    "ValueError: Weights file 'w.hdf5' is not an HDF5 file. [while running "
    "'Embed/RunInference/BeamML_RunInference']\n"
)
WORKER_TRACE = (
    "org.apache.spark.api.python.PythonException: Traceback (most recent "
    "call last):\n"
    '  File "worker.py", line 10, in main\n'
    "    import keras_elmo\n"
    "ModuleNotFoundError: No module named 'keras_elmo'\n"
)


class FakeJavaException:
    """What PySpark's `Py4JJavaError.java_exception` offers."""

    def __init__(self, text, cause=None):
        self.text, self.cause = text, cause

    def getCause(self):
        return self.cause

    def toString(self):
        return self.text


class FakePy4JJavaError(Exception):
    def __init__(self, java):
        super().__init__(
            "An error occurred while calling o42.save.\n: " + java.text
        )
        self.java_exception = java


def test_engine_cause_is_one_line():
    assert engine_cause(RuntimeError(BEAM_MESSAGE)) == (
        "ValueError: Weights file 'w.hdf5' is not an HDF5 file. [while "
        "running 'Embed/RunInference/BeamML_RunInference']"
    )
    root = FakeJavaException(WORKER_TRACE)
    stage = FakeJavaException(
        "org.apache.spark.SparkException: Job aborted due to stage "
        "failure: Task 0 in stage 1.0 failed 4 times",
        root,
    )
    error = FakePy4JJavaError(stage)
    assert engine_cause(error) == (
        "ModuleNotFoundError: No module named 'keras_elmo'"
    )
    leaf = FakeJavaException(
        "java.io.IOException: No FileSystem for scheme: s4\n\tat x.y(z)"
    )
    assert engine_cause(FakePy4JJavaError(FakeJavaException("a", leaf))) == (
        "java.io.IOException: No FileSystem for scheme: s4"
    )
    assert engine_cause(KeyError("k")) == "'k'"
    assert engine_cause(RuntimeError("")) == "RuntimeError"


def test_engine_failures_passes_refusals_and_wraps_the_rest():
    with pytest.raises(ValueError, match="^one line$"):
        with engine_failures("Beam"):
            raise ValueError("one line")
    with pytest.raises(FileExistsError, match="^exists;\nchanged: x$"):
        with engine_failures("Spark"):
            raise FileExistsError("exists;\nchanged: x")
    with pytest.raises(EngineFailed) as raised:
        with engine_failures("Beam"):
            raise ValueError(BEAM_MESSAGE)
    assert str(raised.value) == (
        "Beam failed: ValueError: Weights file 'w.hdf5' is not an HDF5 "
        "file. [while running 'Embed/RunInference/BeamML_RunInference']"
    )
    error = FakePy4JJavaError(FakeJavaException(WORKER_TRACE))
    with pytest.raises(EngineFailed) as raised:
        with engine_failures("Spark"):
            raise error
    assert str(raised.value) == (
        "Spark failed: ModuleNotFoundError: No module named 'keras_elmo'"
    )
    assert raised.value.__cause__ is error


def test_quiet_engine_logs_keeps_engine_errors_out(caplog):
    try:
        quiet_engine_logs()
        with caplog.at_level(logging.INFO):
            logging.getLogger("apache_beam.runners.common").error(
                "failed", exc_info=(ValueError, ValueError("x"), None)
            )
            logging.getLogger("keras_elmo.cli").error("ours")
        assert [r.getMessage() for r in caplog.records] == ["ours"]
        caplog.clear()
        quiet_engine_logs(verbose=True)
        with caplog.at_level(logging.INFO):
            logging.getLogger("apache_beam.runners.common").error("failed")
        assert [r.getMessage() for r in caplog.records] == ["failed"]
    finally:
        quiet_engine_logs(verbose=True)


def test_bad_spark_master_first_line_is_the_cause(tmp_path, capsys):
    pytest.importorskip("pyspark")
    corpus = tmp_path / "in.txt"
    corpus.write_text("a fine film\n", encoding="utf-8")
    argv = ["embed", str(corpus), str(tmp_path / "out")]
    argv += ["--random-weights", "tiny", "--skip-corpus-check"]
    argv += ["--spark-master", "spark://127.0.0.1:1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "keras-elmo embed: error: Spark master 'spark://127.0.0.1:1' does "
        "not answer (127.0.0.1:1: Connection refused); expected a running "
        "standalone master at that address (started with Spark's "
        "sbin/start-master.sh), or use local[N] to run on this machine "
        "with N cores."
    ]
    assert not (tmp_path / "out").exists()


def test_spark_master_urls_checked():
    pytest.importorskip("pyspark")
    from keras_elmo.integrations.spark.session import check_master

    check_master("local[2]")  # not probed
    check_master("yarn")
    with pytest.raises(ValueError, match=r"spark://HOST:PORT"):
        check_master("spark://127.0.0.1:port")
    with pytest.raises(ConnectionError, match=r"127\.0\.0\.1:1: .*; "):
        check_master("spark://127.0.0.1:1")


class FakeConf:
    def __init__(self, values):
        self.values = values

    def get(self, key, default=None):
        return self.values.get(key, default)


class FakeContext:
    def __init__(self, python, conf):
        self.pythonExec, self.conf = python, FakeConf(conf)

    def getConf(self):
        return self.conf


class FakeSession:
    def __init__(self, python="python3", conf=None):
        self.sparkContext = FakeContext(python, conf or {})


def test_spark_api_runs_this_python_where_none_is_named(monkeypatch):
    pytest.importorskip("pyspark")
    from keras_elmo.integrations.spark.session import use_this_python

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    session = FakeSession()
    use_this_python(session)
    assert session.sparkContext.pythonExec == sys.executable
    # A Python the user named is kept: in the session, its conf, the env.
    session = FakeSession("/opt/py/bin/python")
    use_this_python(session)
    assert session.sparkContext.pythonExec == "/opt/py/bin/python"
    session = FakeSession(conf={"spark.pyspark.python": "./env/bin/python"})
    use_this_python(session)
    assert session.sparkContext.pythonExec == "python3"
    monkeypatch.setenv("PYSPARK_PYTHON", "python3")
    session = FakeSession()
    use_this_python(session)
    assert session.sparkContext.pythonExec == "python3"
