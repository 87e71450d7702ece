"""A standalone Spark cluster on 127.0.0.1, from the pyspark package itself.

`pip install pyspark` ships Spark's jars and `bin/spark-class`; with a
Java runtime (17 or 21), that starts a standalone master and workers as
separate JVM processes, i.e. a real cluster: executors in their own
processes, Python workers under them, tasks re-run when one is lost.
Used by the tests and `benchmarks/spark_embed.py`; also a way to try
`keras-elmo embed --spark-master` on one machine:

    with LocalCluster(workers=2, cores=1) as cluster:
        ...  # SparkSession.builder.master(cluster.url)

Every process runs under `timeout` (coreutils) and stops by itself after
`lifetime_s`, even if the caller dies without `stop()`; `stop()` ends the
process groups it started (a worker's group holds its executors and their
Python workers).
"""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time


def spark_class():
    """The `bin/spark-class` of the installed pyspark package."""
    import pyspark

    path = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    if not os.path.exists(path):
        raise FileNotFoundError(f"pyspark has no {path}.")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """A master and `workers` worker processes of `cores` cores each.

    Args:
        workers: int. Worker processes.
        cores: int. Cores each worker offers (one task per core).
        memory: str. Memory each worker offers to executors (`"2g"`).
        lifetime_s: float. Every process is killed after this long.
        work_dir: str or None. Logs and worker folders (a temporary
            folder by default, removed by `stop()` only if it made it).
        env: dict or None. Extra environment of the processes (reaches
            the executors and their Python workers, e.g. `PYTHONPATH`).
    """

    def __init__(
        self,
        workers=2,
        cores=1,
        memory="2g",
        lifetime_s=900,
        work_dir=None,
        env=None,
    ):
        self.workers = int(workers)
        self.cores = int(cores)
        self.memory = memory
        self.lifetime_s = lifetime_s
        self._own_dir = work_dir is None
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="spark-cluster-")
        os.makedirs(self.work_dir, exist_ok=True)
        self.env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", **(env or {}))
        self.port = None
        self.master = None
        self.worker_processes = []

    @property
    def url(self):
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name, args):
        log = open(os.path.join(self.work_dir, f"{name}.log"), "wb")
        argv = ["timeout", "--signal=KILL", str(int(self.lifetime_s))]
        argv += [spark_class()] + args
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,  # its own group: stop() ends it whole
        )

    def log(self, name):
        with open(os.path.join(self.work_dir, f"{name}.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")

    def _wait(self, name, pattern, count, deadline):
        while time.monotonic() < deadline:
            if len(re.findall(pattern, self.log(name))) >= count:
                return
            if self.master.poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError(
            f"The local Spark cluster did not start ({pattern!r} x {count} "
            f"not in {name}.log):\n{self.log(name)[-3000:]}"
        )

    def start(self, timeout_s=240):
        """Starts the master, then the workers; returns once all workers
        have registered."""
        deadline = time.monotonic() + timeout_s
        self.port = free_port()
        self.master = self._spawn(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                "0",
            ],
        )
        self._wait("master", r"Starting Spark master at", 1, deadline)
        for i in range(self.workers):
            folder = os.path.join(self.work_dir, f"worker{i}")
            self.worker_processes.append(
                self._spawn(
                    f"worker{i}",
                    [
                        "org.apache.spark.deploy.worker.Worker",
                        self.url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        str(self.cores),
                        "--memory",
                        self.memory,
                        "--webui-port",
                        "0",
                        "--work-dir",
                        folder,
                    ],
                )
            )
        self._wait("master", r"Registering worker", self.workers, deadline)
        return self

    def kill_worker(self, index, sig=signal.SIGKILL):
        """Sends `sig` to worker `index`'s process group (the worker, its
        executors and their Python workers: a lost machine)."""
        process = self.worker_processes[index]
        os.killpg(process.pid, sig)
        process.wait()

    def stop(self):
        import shutil

        for process in self.worker_processes + [self.master]:
            if process is not None and process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
