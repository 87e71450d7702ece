"""A model loader for the cluster tests that records where it runs.

`keras_elmo.integrations.spark.embed_dataframe(..., loader=counting_load)`
imports it on the executors (the tests put the repository on their
`PYTHONPATH`). The spec's `count_to` folder receives `loads` (a process id per
model load) and `calls` (`pid task_attempt` per model call), so a test can count
loads per Python worker and the tasks each worker ran.
"""

import os

from keras_elmo.embedding.model_spec import load_spec


def _append(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text + "\n")


class CountedRunner:
    """Calls `runner`, appending `pid task_attempt` to `path` each time."""

    def __init__(self, runner, path):
        self.runner = runner
        self.path = path

    def __call__(self, token_lists):
        from pyspark import TaskContext

        attempt = TaskContext.get().taskAttemptId()
        _append(self.path, f"{os.getpid()} {attempt}")
        return self.runner(token_lists)


def counting_load(spec):
    """`load_spec` of `spec` without `count_to`; appends this process's
    id to `count_to/loads` first."""
    spec = dict(spec)
    folder = spec.pop("count_to")
    _append(os.path.join(folder, "loads"), str(os.getpid()))
    runner, description = load_spec(spec)
    return CountedRunner(runner, os.path.join(folder, "calls")), description


def read_counts(folder):
    """`(loads, calls)`: the pids of the loads, the `(pid, attempt)`s of
    the calls."""

    def lines(name):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return [line.split() for line in f.read().splitlines()]

    loads = [int(pid) for (pid,) in lines("loads")]
    calls = [(int(pid), int(attempt)) for pid, attempt in lines("calls")]
    return loads, calls
