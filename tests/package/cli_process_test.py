"""`tests.cli_process.run` (a fork of a zygote that imported TensorFlow)
gives what a fresh `python -m keras_elmo.cli.main` process gives: exit
status, stdout and stderr, for a command that succeeds, one that refuses
its input and one argparse refuses; and a request whose import-time
environment differs runs in a real subprocess; and `wait_child`, which
it and the crash sweeps wait on their children with."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests import cli_process
from tests.training.training_helpers import cli_env


def fresh(argv, env):
    return subprocess.run(
        [sys.executable, "-m", "keras_elmo.cli.main", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    "argv, status",
    [
        (["presets"], 0),
        (["embed", "no_such_input.txt", "out.hdf5"], 2),
        (["embed", "in.txt", "out.hdf5", "--no-such-flag"], 2),
    ],
)
@pytest.mark.large
def test_a_fork_gives_what_a_fresh_process_gives(
    tmp_path, monkeypatch, argv, status
):
    monkeypatch.chdir(tmp_path)
    env = cli_env()
    forked = cli_process.run(argv, env)
    expected = fresh(argv, env)
    assert forked.returncode == expected.returncode == status
    assert forked.stdout == expected.stdout
    assert forked.stderr == expected.stderr
    assert not (tmp_path / "out.hdf5").exists()


def test_environment_read_at_import_is_never_forked(monkeypatch):
    calls = []
    monkeypatch.setattr(
        cli_process.subprocess, "run", lambda *a, **k: calls.append(a[0])
    )
    env = cli_env(KERAS_BACKEND="jax")
    cli_process.run(["--help"], env)
    assert calls == [[sys.executable, "-m", "keras_elmo.cli.main", "--help"]]
    assert cli_process._import_time(cli_env(TF_NUM_INTEROP_THREADS="1")) != (
        cli_process._import_time(cli_env())
    )


def _child(action):
    pid = os.fork()
    if pid == 0:  # never returns into pytest
        try:
            action()
        finally:
            os._exit(0)
    return pid


def test_wait_child_gives_the_exit_code_the_signal_or_none_past_its_timeout():
    assert cli_process.wait_child(_child(lambda: os._exit(7)), 60) == 7
    killed = _child(lambda: os.kill(os.getpid(), signal.SIGKILL))
    assert cli_process.wait_child(killed, 60) == -signal.SIGKILL
    hung = _child(lambda: time.sleep(600))
    assert cli_process.wait_child(hung, 0.2) is None
    with pytest.raises(ChildProcessError):  # killed and reaped
        os.waitpid(hung, os.WNOHANG)
