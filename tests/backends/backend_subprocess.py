"""Runs a script of this folder under another Keras backend, for the tests.

Keras fixes its backend when it is imported, so the TensorFlow test
process runs the JAX and PyTorch checks in a subprocess: `run_script`
sets `KERAS_BACKEND`, starts `$KERAS_ELMO_JAX_PYTHON` /
`$KERAS_ELMO_TORCH_PYTHON` (a python with that backend that sees this
one's packages) or else `sys.executable`, in the repository root, and
FAILS the test with the subprocess's error when it exits non-zero (a
missing backend is a failure, never a skip). The scripts put the
repository root first on `sys.path`, so they import this checkout's
`keras_elmo`. JAX runs on the CPU at XLA optimisation level 0: on 2 CPU
cores its compile time (one compile per initializer shape and per op)
is most of the run, and the outputs stay within the parity tolerance.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(__file__)
ROOT = os.path.dirname(os.path.dirname(HERE))

_BACKENDS = {
    "jax": (
        "KERAS_ELMO_JAX_PYTHON",
        "it needs jax (pip install -e '.[jax]', or "
        "KERAS_ELMO_JAX_PYTHON=<a python with jax>)",
    ),
    "torch": (
        "KERAS_ELMO_TORCH_PYTHON",
        "it needs torch's CPU build (make test-torch, or "
        "tools/install_torch_cpu.sh PYTHON, not a plain pip install torch: "
        "the CUDA build), or KERAS_ELMO_TORCH_PYTHON=<a python with torch>",
    ),
}


def run_script(backend, script, args, xla_flags="", what="", timeout=600):
    """Runs `tests/backends/<script>` with `args` under `backend`.

    Args:
        backend: `"jax"` or `"torch"`.
        script: the file name in this folder.
        args: its command-line arguments (converted with `str`).
        xla_flags: extra `XLA_FLAGS` (JAX), e.g. forced host devices.
        what: words for the failure message ("training ").
        timeout: seconds.

    Returns:
        The finished `subprocess.CompletedProcess`.
    """
    variable, needs = _BACKENDS[backend]
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    if backend == "jax":
        env["JAX_PLATFORMS"] = "cpu"
        env["XLA_FLAGS"] = (
            f"--xla_backend_optimization_level=0 {xla_flags}".strip()
        )
    python = os.environ.get(variable, sys.executable)
    run = subprocess.run(
        [python, os.path.join(HERE, script)] + [str(a) for a in args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if run.returncode != 0:
        pytest.fail(
            f"the {backend} {what}subprocess ({python}) failed with exit "
            f"code {run.returncode}; {needs}:\n" + run.stderr[-3000:]
        )
    return run
