"""Multi-worker and mirrored training equal a single process."""

import json
import os
import socket
import subprocess

import numpy as np
import pytest

from tests.training.training_helpers import cli_command
from tests.training.training_helpers import cli_env
from tests.training.training_helpers import hdf5_arrays
from tests.training.training_helpers import run_cli
from tests.training.training_helpers import tiny_train_args


def args(vocab, out, strategy):
    return tiny_train_args(
        vocab,
        out,
        "--steps-per-epoch",
        "8",
        "--batch-size",
        "16",
        "--dropout",
        "0",
        "--strategy",
        strategy,
    )


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def assert_same_weights(a_dir, b_dir, rtol=1e-4, atol=1e-6):
    for name in ("weights.hdf5", "softmax.hdf5"):
        a = hdf5_arrays(os.path.join(a_dir, name))
        b = hdf5_arrays(os.path.join(b_dir, name))
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_allclose(b[key], a[key], rtol, atol, err_msg=key)


@pytest.fixture(scope="module")
def single_process(sample_vocab, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("single") / "run")
    done = run_cli(*args(sample_vocab, out, "one_device"))
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.large
def test_two_workers_match_a_single_process(
    sample_vocab, single_process, tmp_path
):
    ports = free_ports(2)
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    outs = [str(tmp_path / f"worker{i}") for i in range(2)]
    processes = []
    for index in range(2):
        tf_config = {
            "cluster": cluster,
            "task": {"type": "worker", "index": index},
        }
        processes.append(
            subprocess.Popen(
                cli_command(*args(sample_vocab, outs[index], "multi_worker")),
                env=cli_env(TF_CONFIG=json.dumps(tf_config)),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for process in processes:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err[-3000:]
    # Only the chief (worker 0) writes the model.
    assert os.path.exists(os.path.join(outs[0], "weights.hdf5"))
    assert not os.path.exists(os.path.join(outs[1], "weights.hdf5"))
    assert_same_weights(single_process, outs[0])


MIRRORED = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from keras_elmo.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.large
def test_mirrored_over_two_cpu_devices_matches(
    sample_vocab, single_process, tmp_path
):
    out = str(tmp_path / "mirrored")
    done = subprocess.run(
        [
            cli_command()[0],
            "-c",
            MIRRORED,
            *args(sample_vocab, out, "mirrored"),
        ],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert_same_weights(single_process, out)
