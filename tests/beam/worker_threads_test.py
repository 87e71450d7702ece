"""TensorFlow's thread pools per Beam worker process: `cores // workers`
for local multi_processing runs (so 2 workers on 2 cores do not run 8
compute threads), TensorFlow's default elsewhere, set before the model
loads (`keras_elmo.utils.thread_pools`)."""

import os
import subprocess
import sys
import textwrap

import pytest

from keras_elmo.embedding.embedding_records import read_manifest
from keras_elmo.embedding.model_spec import load_spec
from keras_elmo.integrations.beam import BiLMModelHandler
from keras_elmo.integrations.beam import prepare_output_dir
from keras_elmo.integrations.beam import run_embed_corpus
from keras_elmo.integrations.beam.model_handler import default_worker_threads
from keras_elmo.integrations.beam.model_handler import describe_spec
from keras_elmo.utils import thread_pools
from tests.beam.corpus import write_corpus

LOG = "KERAS_ELMO_TEST_THREADS_LOG"
CORES = len(os.sched_getaffinity(0))


def thread_logging_loader(spec):
    """Loads as `keras-elmo embed` does, then logs this process's pools."""
    import tensorflow as tf

    loaded = load_spec(spec)
    with open(os.environ[LOG], "a") as f:
        intra = tf.config.threading.get_intra_op_parallelism_threads()
        inter = tf.config.threading.get_inter_op_parallelism_threads()
        f.write(f"{os.getpid()} {intra} {inter}\n")
    return loaded


def test_threads_per_worker_is_each_workers_share_of_the_cores():
    assert thread_pools.threads_per_worker(2, cores=2) == 1
    assert thread_pools.threads_per_worker(3, cores=8) == 2
    assert thread_pools.threads_per_worker(4, cores=2) == 1  # never 0
    assert thread_pools.threads_per_worker(1) == CORES
    with pytest.raises(ValueError, match="`workers`.*positive integer.*0"):
        thread_pools.threads_per_worker(0)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--runner=FnApiRunner"], None),
        (["--direct_num_workers=2"], None),
        (
            ["--direct_num_workers=2", "--direct_running_mode=multi_threading"],
            None,
        ),
        (
            [
                "--direct_num_workers=2",
                "--direct_running_mode=multi_processing",
            ],
            max(1, CORES // 2),
        ),
        (
            [
                "--direct_num_workers=0",
                "--direct_running_mode=multi_processing",
            ],
            1,  # 0 workers: one per core
        ),
        (["--runner=DataflowRunner", "--project=p"], None),
    ],
)
def test_default_worker_threads_splits_the_cores_between_worker_processes(
    args, expected
):
    assert default_worker_threads(args) == expected


def test_handler_refuses_a_thread_count_that_is_not_positive():
    with pytest.raises(ValueError, match="`threads`.*positive integer.*0"):
        BiLMModelHandler({"preset": "elmo_small_en"}, threads=0)


def test_pools_started_already_are_kept_and_reported():
    import tensorflow as tf

    tf.constant(1.0) + 1.0  # this process has run TensorFlow
    before = tf.config.threading.get_intra_op_parallelism_threads()
    assert thread_pools.size_tensorflow_threads(1) is False
    assert tf.config.threading.get_intra_op_parallelism_threads() == before


def test_pools_are_sized_in_a_fresh_process():
    code = textwrap.dedent(
        """
        import tensorflow as tf
        from keras_elmo.utils import thread_pools
        assert thread_pools.size_tensorflow_threads(3) is True
        print(tf.config.threading.get_intra_op_parallelism_threads(),
              tf.config.threading.get_inter_op_parallelism_threads())
        """
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["3", "3"]


@pytest.mark.large
def test_each_worker_process_runs_with_its_share(
    reference_weights, tmp_path, monkeypatch
):
    options, weights = reference_weights("tiny")
    spec = {"options": options, "weights": weights}
    log = tmp_path / "threads.log"
    log.touch()
    monkeypatch.setenv(LOG, str(log))
    pattern, _, lines = write_corpus(str(tmp_path))
    output = str(tmp_path / "out")
    prepare_output_dir(output)
    handler = BiLMModelHandler(
        spec, batch_size=8, threads=1, loader=thread_logging_loader
    )
    args = ["--runner=FnApiRunner", "--direct_num_workers=2"]
    args += ["--direct_running_mode=multi_processing"]
    run_embed_corpus(args, [pattern], output, handler, describe_spec(spec))
    loads = [line.split() for line in log.read_text().splitlines()]
    assert 1 <= len(loads) <= 2, loads
    assert all(load[1:] == ["1", "1"] for load in loads), loads
    assert str(os.getpid()) not in [load[0] for load in loads]
    manifest = read_manifest(output)
    assert manifest["counts"]["lines"] == sum(map(len, lines.values()))
