"""keras_elmo.integrations.spark on a real standalone cluster: a master and 2
worker
processes on 127.0.0.1 started from pyspark's own `bin/spark-class`
(`keras_elmo.integrations.spark.LocalCluster`; needs Java 17+, which `.ci/run`
installs). Every line is checked against in-process `keras-elmo embed`,
and one worker is killed with SIGKILL in the middle of a run.

The cluster's processes die by themselves after `LIFETIME_S`, and the
module's teardown kills them first.
"""

import gzip
import json
import os
import random
import sys
import threading
import time

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest

from keras_elmo.cli.main import main
from keras_elmo.integrations.spark import LocalCluster
from keras_elmo.integrations.spark import embed_dataframe
from keras_elmo.integrations.spark import embed_text_file
from keras_elmo.integrations.spark import read_manifest

pytestmark = [pytest.mark.large, pytest.mark.engine]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SAMPLE = os.path.join(REPO, "tests", "data", "en_pd_lm_sample.txt.gz")
LIFETIME_S = 1800  # a loaded 2-core machine took 11 min for this file
# Small files still make several tasks (a split per ~quarter of the input).
SPLITS = [
    "spark.sql.files.minPartitionNum=4",
    "spark.sql.files.openCostInBytes=1024",
    "spark.ui.enabled=false",
    "spark.executor.memory=1g",
]
TRICKY = [
    b"",
    b"  spaced   out  ",
    b"\xef\xbb\xbfa byte-order mark",
    b"not \xff utf-8",
    b"windows line\r",
    b"a lone\rcarriage return",
    b"long " * 120,
]


def _real_lines(count):
    lines = []
    with gzip.open(SAMPLE, "rb") as f:
        for line in f:
            lines.append(line.rstrip(b"\n"))
            if len(lines) == count:
                return lines
    raise ValueError(f"The sample has fewer than {count} lines.")


def _write(path, lines):
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    return str(path)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tmp_path_factory.mktemp("spark_cluster")
    env = {"PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "2"}
    with LocalCluster(
        workers=2, cores=1, lifetime_s=LIFETIME_S, work_dir=str(work), env=env
    ) as running:
        yield running


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A file of real lines with the tricky ones among them, and the
    in-process `keras-elmo embed --all` output of it."""
    folder = tmp_path_factory.mktemp("spark_corpus")
    real = _real_lines(53)
    path = _write(folder / "in.txt", real[:20] + TRICKY + real[20:])
    expected = str(folder / "in_process.hdf5")
    assert main(["embed", path, expected, "--all"]) == 0
    return path, expected


def _datasets(path):
    with h5py.File(path, "r") as f:
        index = f["sentence_to_index"][0]
        return {k: f[k][()] for k in f if k != "sentence_to_index"}, index


def _assert_close(got, expected, name):
    """Equal within 1e-5 of the line's largest magnitude (batches of other
    shapes round float32 sums differently, by ~1e-7 of it)."""
    assert got.shape == expected.shape, name
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    error = float(np.abs(got - expected).max()) if expected.size else 0.0
    assert error <= 1e-5 * scale, (name, error, scale)


def test_cli_hdf5_output_is_the_in_process_output(
    cluster, corpus, tmp_path, capsys
):
    path, expected = corpus
    out = str(tmp_path / "spark.hdf5")
    argv = ["embed", path, out, "--all", "--spark-master", cluster.url]
    for item in SPLITS:
        argv += ["--spark-conf", item]
    assert main(argv + ["--batch-size", "8"]) == 0
    got, got_index = _datasets(out)
    want, want_index = _datasets(expected)
    assert sorted(got) == sorted(want) == sorted(map(str, range(60)))
    assert got_index == want_index
    for key in want:
        _assert_close(got[key], want[key], key)
    capsys.readouterr()
    assert main(argv) != 0
    assert "exists; pass --force" in capsys.readouterr().err


@pytest.fixture(scope="module")
def spark(cluster):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(cluster.url).appName("tests")
    builder = builder.config("spark.driver.host", "127.0.0.1")
    for item in SPLITS:
        key, _, value = item.partition("=")
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    yield session
    session.stop()


def test_embed_dataframe_keeps_columns_and_matches_embed(spark, corpus):
    from pyspark.sql import functions as F

    path, expected = corpus
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", "replace").split("\n")[:-1]
    df = spark.createDataFrame(
        [(i, line, float(i) / 4) for i, line in enumerate(lines)],
        "id long, body string, score double",
    ).repartition(3)
    out = embed_dataframe(df, "body", layers="top", batch_size=16)
    assert out.columns == ["id", "body", "score", "tokens", "shape", "vectors"]
    rows = out.orderBy(F.col("id")).collect()
    want, _ = _datasets(expected)
    assert [r.id for r in rows] == list(range(len(lines)))
    for r in rows:
        assert (r.body, r.score) == (lines[r.id], r.id / 4)
        if "\ufffd" in r.body:
            continue  # the DataFrame holds the replaced text, not the bytes
        vectors = np.frombuffer(r.vectors, "<f4").reshape(r.shape)
        _assert_close(vectors, want[str(r.id)][-1], f"row {r.id}")


def test_one_model_load_per_python_worker_across_tasks_and_jobs(
    spark, tmp_path
):
    """Two jobs of 6 tasks each on 2 workers of 1 core: each Python worker
    loads the model once (`keras_elmo.integrations.spark.worker_model`) and
    Spark reuses it for its later tasks, so there are fewer loads than tasks and
    no process loads twice. (A load per task would cost a TensorFlow import and
    a model load, seconds each, per task.)"""
    from tests.spark.counting_loader import counting_load
    from tests.spark.counting_loader import read_counts

    df = spark.createDataFrame(
        [(i, f"sentence number {i} " * (1 + i % 3)) for i in range(48)],
        "id long, body string",
    ).repartition(6)
    model = {"random_weights": "tiny", "count_to": str(tmp_path)}
    out = embed_dataframe(
        df,
        "body",
        model=model,
        layers="top",
        batch_size=4,
        loader=counting_load,
    )
    first = out.select("id", "shape").collect()
    second = out.select("id", "shape").collect()
    assert sorted(r.id for r in first) == sorted(r.id for r in second)
    assert len(first) == 48
    loads, calls = read_counts(str(tmp_path))
    tasks = {attempt for _, attempt in calls}
    assert len(tasks) == 12, calls
    assert sorted(set(loads)) == sorted(loads), loads  # once per process
    assert {pid for pid, _ in calls} <= set(loads)
    assert 1 <= len(loads) <= 2, loads  # one Python worker per core


def test_the_counts_check_reads_back_in_spark_default_splits(spark, tmp_path):
    """A run's small input splits (here 32 KiB) do not reach the read-back
    of its output: `read_back` uses Spark's defaults (128 MiB, 4 MiB per
    file) in a session of its own, and the caller's session keeps its
    value."""
    from keras_elmo.integrations.spark.output_counts import read_back

    session = spark.newSession()
    session.conf.set("spark.sql.files.maxPartitionBytes", "32768")
    out = str(tmp_path / "vectors")
    # Random bytes: Parquet cannot compress them, the files stay 8 MB.
    rows = [(i, random.Random(i).randbytes(1_000_000)) for i in range(8)]
    df = session.createDataFrame(rows, "line long, vectors binary")
    df.repartition(2).write.parquet(out)
    assert session.read.parquet(out).rdd.getNumPartitions() > 100
    assert read_back(session, out).rdd.getNumPartitions() <= 4
    assert session.conf.get("spark.sql.files.maxPartitionBytes") == "32768"
    assert sorted(r.line for r in read_back(session, out).collect()) == list(
        range(8)
    )


def _rows(spark, lines):
    return spark.createDataFrame(
        [("f", line, ["a"] * (line % 3), [line % 3, 4]) for line in lines],
        "file string, line long, tokens array<string>, shape array<int>",
    )


def test_counts_check_counts_and_refuses_doubled_or_missing_lines(spark):
    from keras_elmo.integrations.spark.output_counts import CountsMismatch
    from keras_elmo.integrations.spark.output_counts import check_counts

    counts, layout = check_counts(_rows(spark, range(6)), {"f": 6}, "top")
    assert counts == {"files": 1, "lines": 6, "tokens": 6, "blank_lines": 2}
    assert layout == {"num_layers": 1, "dim": 4}
    doubled = _rows(spark, [0, 1, 2, 3, 3, 5])
    with pytest.raises(CountsMismatch, match="f: line 3 is in the output 2"):
        check_counts(doubled, {"f": 6}, "top")
    with pytest.raises(CountsMismatch, match=r"= \(5, 0, 5\), expected"):
        check_counts(_rows(spark, [0, 1, 2, 3, 5]), {"f": 6}, "top")
    with pytest.raises(CountsMismatch, match="6 lines read"):
        check_counts(_rows(spark, range(1, 7)), {"f": 6}, "top")


def test_counts_check_spans_bitmap_buckets(spark):
    """70,000 lines fill three buckets of 32,768 (the first holds line 0
    only): all present once passes; a line twice in another bucket than
    its first copy, or a line missing while one past the end is present,
    fails."""
    from pyspark.sql import functions as F

    from keras_elmo.integrations.spark.output_counts import CountsMismatch
    from keras_elmo.integrations.spark.output_counts import check_counts

    def rows(lines):
        return spark.createDataFrame([(i,) for i in lines], "line long").select(
            F.lit("f").alias("file"),
            "line",
            F.array_repeat(F.lit("a"), (F.col("line") % 2).cast("int")).alias(
                "tokens"
            ),
            F.array(F.lit(3), F.lit(8)).alias("shape"),
        )

    lines = list(range(70_000))
    counts, _ = check_counts(rows(lines), {"f": 70_000}, "top")
    assert counts == {
        "files": 1,
        "lines": 70_000,
        "tokens": 35_000,
        "blank_lines": 35_000,
    }
    with pytest.raises(CountsMismatch, match="line 40000 is in the output 2"):
        check_counts(rows(lines[:-1] + [40_000]), {"f": 70_000}, "top")
    shifted = [i for i in lines if i != 33_000] + [70_000]
    with pytest.raises(CountsMismatch, match=r"\(70000, 0, 70000\)"):
        check_counts(rows(shifted), {"f": 70_000}, "top")


def _embedding_stage_progress(spark):
    """`(completed, active)` tasks of the running stages."""
    tracker = spark.sparkContext.statusTracker()
    done = active = 0
    for stage in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage)
        if info is not None:
            done += info.numCompletedTasks
            active += info.numActiveTasks
    return done, active


def test_a_worker_killed_mid_run_leaves_a_complete_exactly_once_output(
    spark, cluster, corpus, tmp_path
):
    """SIGKILL to one worker (its executor and Python workers with it)
    once the embedding stage has finished a task and runs others: Spark
    re-runs the lost tasks on the other worker; every line is in the
    Parquet output exactly once, with the in-process vectors, and the
    manifest is written after the counts check."""
    path, expected = corpus
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")[:-1]
    big = _write(tmp_path / "big.txt", lines * 5)  # line i is line i % 60
    out = str(tmp_path / "parquet")
    result = {}

    def run():
        try:
            result["manifest"] = embed_text_file(
                spark, big, out, layers="all", batch_size=8
            )
        except BaseException as e:  # reported by the assertions below
            result["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and thread.is_alive():
        done, active = _embedding_stage_progress(spark)
        if done >= 1 and active >= 1 and os.path.isdir(out):
            break
        time.sleep(0.2)
    assert thread.is_alive(), f"finished before the kill: {result}"
    cluster.kill_worker(0)
    killed_at = _embedding_stage_progress(spark)
    thread.join(timeout=900)
    assert not thread.is_alive(), "no result after the kill"
    assert "error" not in result, result.get("error")
    manifest = read_manifest(spark, out)
    assert manifest == json.loads(json.dumps(result["manifest"]))
    assert manifest["counts"]["lines"] == 300, killed_at
    table = pq.read_table(out)
    assert sorted(table.column("line").to_pylist()) == list(range(300))
    want, _ = _datasets(expected)
    for row in table.to_pylist():
        vectors = np.frombuffer(row["vectors"], "<f4").reshape(row["shape"])
        _assert_close(vectors, want[str(row["line"] % 60)], row["line"])


def test_input_splits_spread_a_small_file_over_every_core(spark, tmp_path):
    """Spark's defaults read a 200 KB file as one task; within an
    embedding run (`compute_splits`) it is one split per core (this
    cluster: 2), larger files are cut into whole waves of one split per
    core, each under 256 KiB (a 1.2 MB file: 6 splits, where fixed 256
    KiB splits gave 5, the fifth alone on one core), a split size the
    session sets is kept, and the session's values come back afterwards."""
    from keras_elmo.integrations.spark.input_splits import MAX_SPLIT_BYTES
    from keras_elmo.integrations.spark.input_splits import SPLIT_CONF
    from keras_elmo.integrations.spark.input_splits import compute_splits

    session = spark.newSession()
    for key in ("spark.sql.files.minPartitionNum",) + tuple(
        key for key, _ in SPLIT_CONF
    ):
        session.conf.unset(key)
    small = _write(tmp_path / "small.txt", [b"x" * 99] * 2000)  # 200 KB
    large = _write(tmp_path / "large.txt", [b"y" * 99] * 12_000)  # 1.2 MB

    def splits(path):
        return session.read.text(path).rdd.getNumPartitions()

    assert splits(small) == 1
    with compute_splits(session, [200_000]) as applied:
        # (200,000 + 8,192) / 2 cores, rounded up
        assert applied == {
            "spark.sql.files.maxPartitionBytes": "104096",
            "spark.sql.files.openCostInBytes": "8192",
        }
        assert splits(small) == 2
    with compute_splits(session, [1_200_000]) as applied:
        split = int(applied["spark.sql.files.maxPartitionBytes"])
        assert split == -(-(1_200_000 + 8192) // 6) <= MAX_SPLIT_BYTES
        assert splits(large) == 6  # 3 waves of 2
    with compute_splits(session) as applied:  # sizes unknown: 256 KiB
        assert applied == dict(SPLIT_CONF)
        assert splits(large) == 5  # ceil(1,200,000 / 262,144)
    assert [session.conf.get(key, None) for key, _ in SPLIT_CONF] == [None] * 2
    assert splits(small) == 1
    session.conf.set("spark.sql.files.maxPartitionBytes", "50000")
    with compute_splits(session, [200_000]) as applied:
        assert list(applied) == ["spark.sql.files.openCostInBytes"]
        assert splits(small) == 4  # ceil(200,000 / 50,000)
    assert session.conf.get("spark.sql.files.maxPartitionBytes") == "50000"
