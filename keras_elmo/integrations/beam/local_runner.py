"""Beam's local multi-worker runner, without its output-flush race.

`--runner=FnApiRunner` (or `DirectRunner`, which hands such pipelines to
`FnApiRunner`) with `--direct_running_mode=multi_threading` or
`multi_processing` talks to its SDK workers over gRPC, and gives data
output streams a periodic flush every `DATA_BUFFER_TIME_LIMIT_MS` (1 s):
the runner's streams to every worker, and the worker threads' streams
back. In apache-beam 2.77 that flush runs on its own thread while the
owner keeps writing into the same buffer:
`TimeBasedBufferingClosableOutputStream.flush` takes the buffer
(`self.get()`), sends it, then empties it (`self._clear()`) under a lock
that the writing thread does not take. Whatever is written between the
two calls is sent nowhere: elements are silently dropped
(`python tools/beam_flush_race.py` shows it in seconds). In `keras-elmo
embed --runner FnApiRunner` with 2 threads, an occasional run lost a
sentence or two; the count checks of
`keras_elmo.integrations.beam.write_embeddings` caught every one and refused to
write the manifest.

`SizeFlushedFnApiRunner` runs the pipeline with every such stream
flushed by size only (`data_buffer_time_limit_ms=-1`, which makes Beam
build the plain `SizeBasedBufferingClosableOutputStream`): what Beam's
in-memory mode and its subprocess workers already do. Only the latency
of a partly filled buffer changes, which a batch pipeline never waits on.
Beam offers no option for the runner's side, so the module default
`worker_handlers.DATA_BUFFER_TIME_LIMIT_MS` is set for the duration of
the run and restored after it (two such runs in one process take turns).
`runner_for(options)` picks this runner for exactly the affected case and
returns None (Beam chooses as usual) otherwise.
"""

import contextlib
import threading

from apache_beam.options.pipeline_options import DirectOptions
from apache_beam.options.pipeline_options import StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.runners.portability.fn_api_runner import worker_handlers

# Beam reads a positive value as "flush on a timer too" and replaces 0 by
# its 1 s default in the embedded workers; a negative value is "by size".
SIZE_ONLY = -1
LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner", "SwitchingDirectRunner")
GRPC_MODES = ("multi_threading", "multi_processing")
_LOCK = threading.Lock()


@contextlib.contextmanager
def _size_only_flush():
    with _LOCK:
        saved = worker_handlers.DATA_BUFFER_TIME_LIMIT_MS
        worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = SIZE_ONLY
        try:
            yield
        finally:
            worker_handlers.DATA_BUFFER_TIME_LIMIT_MS = saved


class SizeFlushedFnApiRunner(FnApiRunner):
    """`FnApiRunner` whose gRPC data streams flush by size only.

    Everything else is `FnApiRunner` unchanged (see the module docstring
    for the race this avoids).
    """

    def run_via_runner_api(self, pipeline_proto, options):
        with _size_only_flush():
            return super().run_via_runner_api(pipeline_proto, options)


def _runner_name(runner):
    if runner is None:
        return "DirectRunner"  # Beam's default
    if isinstance(runner, str):
        return runner.rsplit(".", 1)[-1]
    return type(runner).__name__


def runner_for(options):
    """`SizeFlushedFnApiRunner()` when `options` ask for a local runner
    whose workers talk gRPC (`direct_running_mode` multi_threading or
    multi_processing); else None."""
    running_mode = options.view_as(DirectOptions).direct_running_mode
    name = _runner_name(options.view_as(StandardOptions).runner)
    if running_mode in GRPC_MODES and name in LOCAL_RUNNERS:
        return SizeFlushedFnApiRunner()
    return None
