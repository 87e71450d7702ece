"""`SizeFlushedFnApiRunner`: the multi-threaded local runner whose worker
output streams flush by size only, so that Beam's timer flush cannot drop
elements (`keras_elmo.integrations.beam.local_runner`).

The race itself is timing-dependent; these tests check its cause instead,
deterministically: which output streams the runner and its worker threads
build, under Beam's runner (timer-flushed: the control) and under ours
(never), and that every element still arrives and the module default is
restored.
"""

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.worker import data_plane
from apache_beam.testing.util import assert_that
from apache_beam.testing.util import equal_to

from keras_elmo.integrations.beam.local_runner import SizeFlushedFnApiRunner
from keras_elmo.integrations.beam.local_runner import runner_for

THREADS = ["--direct_num_workers=2", "--direct_running_mode=multi_threading"]


def _run_recording_streams(runner, monkeypatch, n=300):
    """Runs a two-stage pipeline on `runner` with 2 threads; returns the
    `data_buffer_time_limit_ms` of every output stream the workers made."""
    limits = []
    create = data_plane.ClosableOutputStream.create

    def recording(close_callback, flush_callback, data_buffer_time_limit_ms):
        limits.append(data_buffer_time_limit_ms)
        return create(close_callback, flush_callback, data_buffer_time_limit_ms)

    monkeypatch.setattr(
        data_plane.ClosableOutputStream, "create", staticmethod(recording)
    )
    options = PipelineOptions(["--runner=FnApiRunner"] + THREADS)
    with beam.Pipeline(runner=runner, options=options) as p:
        grouped = (
            p
            | beam.Create(range(n))
            | beam.Map(lambda i: (i % 7, b"x" * 1000 + str(i).encode()))
            | beam.GroupByKey()
            | beam.FlatMap(lambda kv: [int(v[1000:]) for v in kv[1]])
        )
        assert_that(grouped, equal_to(list(range(n))))
    return limits


def test_beams_own_threaded_runner_flushes_on_a_timer(monkeypatch):
    """The control: the cause is there without our runner."""
    limits = _run_recording_streams(FnApiRunner(), monkeypatch)
    assert limits and all(limit > 0 for limit in limits), limits


def test_our_threaded_runner_flushes_by_size_only(monkeypatch):
    from apache_beam.runners.portability.fn_api_runner import worker_handlers

    default = worker_handlers.DATA_BUFFER_TIME_LIMIT_MS
    limits = _run_recording_streams(SizeFlushedFnApiRunner(), monkeypatch)
    assert limits and all(limit <= 0 for limit in limits), limits
    assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == default > 0


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--runner=FnApiRunner"] + THREADS, SizeFlushedFnApiRunner),
        (["--runner=DirectRunner"] + THREADS, SizeFlushedFnApiRunner),
        (THREADS, SizeFlushedFnApiRunner),  # Beam's default: DirectRunner
        (["--runner=FnApiRunner", "--direct_num_workers=2"], type(None)),
        (
            [
                "--runner=FnApiRunner",
                "--direct_num_workers=2",
                "--direct_running_mode=multi_processing",
            ],
            SizeFlushedFnApiRunner,
        ),
        (
            [
                "--runner=FnApiRunner",
                "--direct_num_workers=2",
                "--direct_running_mode=in_memory",
            ],
            type(None),
        ),
        (["--runner=DataflowRunner"] + THREADS, type(None)),
        (["--runner=BundleBasedDirectRunner"] + THREADS, type(None)),
    ],
)
def test_runner_for_replaces_only_the_threaded_local_runner(args, expected):
    assert type(runner_for(PipelineOptions(args))) is expected
