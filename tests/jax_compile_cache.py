"""One JAX compilation cache for every JAX subprocess of a test run.

The JAX checks run in subprocesses (`tests/backends/backend_subprocess.py`,
the JAX form of `tests/models/elmo_layer_text_inputs_test.py`, the
README training command under each backend), and on 2 CPU cores most of
each one's time is XLA compiling the same small programs again: every
primitive of the BiLM's layers at the same shapes, each initializer, the
same training step. `pytest_configure` (tests/conftest.py) points JAX's
persistent compilation cache at one fresh folder for the run, through the
environment every subprocess inherits (pytest-xdist's workers included:
the controller sets it before it starts them), so a program compiled by
one subprocess is read back by the next instead of compiled again.

What is cached is XLA's compiled executable keyed by the program, the
compile options, the backend and jaxlib's version (JAX's own key), so a
hit runs the very program a compile would have produced: no check sees a
different computation. The folder is new for each run and removed at its
end; nothing carries over between runs. A caller that already set
`JAX_COMPILATION_CACHE_DIR` keeps its own folder.

Two subprocesses may compile the same program at once: JAX writes an
entry in place, and a reader that meets a half-written one warns and
compiles it instead (`jax._src.compiler._cache_read`).
"""

import os
import shutil
import tempfile

_VARIABLES = {
    # Cache every program, however quick to compile or small: most of
    # these are one primitive each, compiled in milliseconds, thousands
    # of times.
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
}
_made = []


def start():
    """Sets the cache's environment for this process and its children,
    unless `JAX_COMPILATION_CACHE_DIR` is set already."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    folder = tempfile.mkdtemp(prefix="keras_elmo_tests_jax_cache_")
    _made.append(folder)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
    for name, value in _VARIABLES.items():
        os.environ.setdefault(name, value)


def stop():
    """Removes the folder `start` made (in the process that made it)."""
    while _made:
        shutil.rmtree(_made.pop(), ignore_errors=True)
