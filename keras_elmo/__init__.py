"""keras_elmo: ELMo (Peters et al. 2018) for Keras 3 and TensorFlow.

`import keras_elmo` loads the public API and registers every layer and
model with Keras, so `.keras` files that contain them load. The one
exception is the `keras-elmo` command line: importing `keras_elmo.cli`
in a process without TensorFlow loaded leaves the API to be loaded on
first use (an attribute of `keras_elmo`, or the command's run), so that
`keras-elmo --help` answers without importing TensorFlow.
"""

import os
import sys

from keras_elmo.version import __version__

__all__ = [
    "__version__",
    "layers",
    "batch_to_ids",
    "pad_tokens",
    "BiLMConfig",
    "BiLM",
    "ElmoLayer",
    "BiLMLanguageModel",
    "Embedder",
    "export_saved_model",
    "export_portable",
]


def _load_api():
    """Imports the public API (and so registers it with Keras); idempotent.

    With `TF_CPP_MIN_LOG_LEVEL=3` (set by the `keras-elmo` command unless
    `-v`, and inherited by its Spark and Beam workers) the first import of
    TensorFlow runs with the process's stderr (file descriptor 2) on
    /dev/null: the lines TensorFlow's C++ start-up writes before its
    logging reads that setting (`I0000 ... oneDNN`, `cuda drivers`) go
    nowhere. A Python error of the import is raised after stderr is back.
    """
    if "tensorflow" in sys.modules or (
        os.environ.get("TF_CPP_MIN_LOG_LEVEL") != "3"
    ):
        _import_api()
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real stderr
        _import_api()
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        _import_api()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _import_api():
    import importlib

    from keras_elmo.api_export import publish_exports
    from keras_elmo.config import BiLMConfig
    from keras_elmo.embedding.embedder import Embedder
    from keras_elmo.export.portable import export_portable
    from keras_elmo.export.saved_model import export_saved_model
    from keras_elmo.models.bilm import BiLM
    from keras_elmo.models.bilm_language_model import BiLMLanguageModel
    from keras_elmo.models.elmo_layer import ElmoLayer
    from keras_elmo.text.batch_to_ids import batch_to_ids
    from keras_elmo.text.token_inputs import pad_tokens

    globals().update(
        layers=importlib.import_module("keras_elmo.layers"),
        BiLMConfig=BiLMConfig,
        Embedder=Embedder,
        export_saved_model=export_saved_model,
        export_portable=export_portable,
        BiLM=BiLM,
        BiLMLanguageModel=BiLMLanguageModel,
        ElmoLayer=ElmoLayer,
        batch_to_ids=batch_to_ids,
        pad_tokens=pad_tokens,
    )
    # Symbols published upstream of where they live (`ElmoLayer`, in
    # `models/`, as `keras_elmo.layers.ElmoLayer`): see `publish_exports`.
    publish_exports()


_loading = []  # non-empty while `_load_api` runs


def __getattr__(name):
    # While the API loads, `from keras_elmo import layers` in a submodule
    # gets AttributeError here, so Python imports the submodule instead.
    if name in __all__ and not _loading:
        _loading.append(name)
        try:
            _load_api()
        finally:
            _loading.pop()
        return globals()[name]
    raise AttributeError(f"module 'keras_elmo' has no attribute {name!r}")


def _importing_for_the_command_line():
    """True while Python imports this package as the parent of
    `keras_elmo.cli...` in a process that has not loaded TensorFlow (the
    `keras-elmo` script). Any other import loads the API at once."""
    if "tensorflow" in sys.modules:
        return False
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in (
            "_find_and_load",
            "_find_and_load_unlocked",
        ):
            name = frame.f_locals.get("name")
            if isinstance(name, str) and name.startswith("keras_elmo.cli"):
                return True
        frame = frame.f_back
    return False


if not _importing_for_the_command_line():
    _loading.append("keras_elmo")
    try:
        _load_api()
    finally:
        _loading.pop()
