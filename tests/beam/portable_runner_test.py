"""`keras-elmo embed --runner PortableRunner` against Beam's own local job
service (`apache_beam.runners.portability.local_job_service_main`), the
Job API the Flink and Spark job servers speak: the pipeline is submitted
over gRPC, run by the service, and gives `keras-elmo embed`'s vectors.

The service binds `localhost` (Beam's choice; loopback only) on a port
it picks, is started under `timeout` and killed by the fixture. The SDK
workers run in the `LOOPBACK` environment (in the submitting process, no
Docker): the environment is the only thing that differs from a Flink or
Spark job server with `--environment_type=DOCKER`.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from keras_elmo.cli.main import main
from keras_elmo.embedding.embedding_records import iter_records
from keras_elmo.embedding.embedding_records import read_manifest
from tests.beam.corpus import real_lines

pytestmark = pytest.mark.large


@pytest.fixture
def job_service(tmp_path):
    port_file = tmp_path / "job.port"
    log = open(tmp_path / "job_service.log", "wb")
    service = subprocess.Popen(
        ["timeout", "600", sys.executable, "-m"]
        + ["apache_beam.runners.portability.local_job_service_main"]
        + ["--port_file", str(port_file)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline or service.poll() is not None:
                raise RuntimeError(
                    "the job service did not start: "
                    + (tmp_path / "job_service.log").read_text()[-2000:]
                )
            time.sleep(0.3)
        yield f"localhost:{port_file.read_text().strip()}"
    finally:
        # The whole group: killing `timeout` alone orphans the service.
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(service.pid, signal.SIGKILL)
        service.wait()
        log.close()


def test_portable_runner_on_the_local_job_service_gives_embed_vectors(
    job_service, reference_weights, tmp_path
):
    options, weights = reference_weights("tiny")
    model = ["--options", options, "--weights", weights]
    lines = real_lines(400, 440) + [b"", b"caf\xc3\xa9 \xff not utf-8"]
    src = tmp_path / "in.txt"
    src.write_bytes(b"\n".join(lines) + b"\n")
    reference = str(tmp_path / "reference.hdf5")
    assert main(["embed", str(src), reference] + model) == 0
    output = str(tmp_path / "out")
    argv = ["embed", str(src), output, "--batch-size", "8"] + model
    argv += ["--runner", "PortableRunner", f"--job_endpoint={job_service}"]
    argv += ["--environment_type=LOOPBACK", "--num-shards", "2"]
    assert main(argv) == 0
    manifest = read_manifest(output)
    assert manifest["counts"]["lines"] == len(lines)
    assert manifest["counts"]["blank_lines"] == 1
    assert manifest["counts"]["not_utf8_lines"] == 1
    assert (manifest["num_layers"], manifest["dim"]) == (3, 32)
    assert manifest["shards"] == [
        f"embeddings-0000{i}-of-00002.tfrecord" for i in range(2)
    ]
    assert sorted(os.listdir(output)) == manifest["shards"] + ["manifest.json"]
    records = sorted(iter_records(output), key=lambda r: r["line"])
    assert [r["line"] for r in records] == list(range(len(lines)))
    with h5py.File(reference, "r") as want:
        for record in records:
            expected = want[str(record["line"])][()]
            got = record["vectors"]
            assert got.shape == expected.shape, record["line"]
            if expected.size:
                scale = float(np.abs(expected).max())
                error = float(np.abs(got - expected).max()) / scale
                assert error <= 1e-6, record["line"]
