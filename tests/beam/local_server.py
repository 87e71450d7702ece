"""A server for one test, started from the package index's own command
on 127.0.0.1: under `timeout` (it stops by itself if the test dies), in
its own process group (killed whole: killing `timeout` alone orphans the
server), ready once its URL answers HTTP."""

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_server(command, url, log_path, env=None, lifetime_s=300):
    """Runs `command` until the block ends; yields once `url` answers."""
    log = open(log_path, "wb")
    server = subprocess.Popen(
        ["timeout", str(lifetime_s)] + command,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.3)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        log.close()
