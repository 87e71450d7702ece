"""keras_elmo: ELMo (Peters et al. 2018) for Keras 3 and TensorFlow.

`import keras_elmo` loads the public API and registers every layer and
model with Keras, so `.keras` files that contain them load. The one
exception is the `keras-elmo` command line: importing `keras_elmo.cli`
in a process without TensorFlow loaded leaves the API to be loaded on
first use (an attribute of `keras_elmo`, or the command's run), so that
`keras-elmo --help` answers without importing TensorFlow.
"""

import importlib.abc
import importlib.util
import os
import sys
import warnings

from keras_elmo.version import __version__

# Modules merged into the module of their concept: the old dotted path
# still imports (the new module itself) and says where it went.
MOVED_MODULES = {
    "keras_elmo.training.run_record": "keras_elmo.training.checkpoints",
    "keras_elmo.training.init_from": "keras_elmo.training.training_config",
    "keras_elmo.training.validation_rules": "keras_elmo.training.evaluate",
    "keras_elmo.testing.test_case": "keras_elmo.testing",
    "keras_elmo.presets.cache_integrity": "keras_elmo.presets.download",
    "keras_elmo.utils.backend": "keras_elmo.utils",
    "keras_elmo.weights.elmoformanylangs_weights": (
        "keras_elmo.weights.elmoformanylangs"
    ),
    "keras_elmo.data.corpus_sniff": "keras_elmo.data.corpus_health",
    "keras_elmo.beam": "keras_elmo.integrations.beam",
    "keras_elmo.spark": "keras_elmo.integrations.spark",
    **dict.fromkeys(
        [
            "keras_elmo.utils.file_modes",
            "keras_elmo.utils.same_file",
            "keras_elmo.utils.write_faults",
        ],
        "keras_elmo.utils.atomic",
    ),
    "keras_elmo.presets.archive_digest": "keras_elmo.presets.archives",
    "keras_elmo.presets.published_archives": "keras_elmo.presets.published",
    "keras_elmo.ops.lstm_recurrence": "keras_elmo.ops.recurrences",
    "keras_elmo.ops.packed_recurrence": "keras_elmo.ops.recurrences",
    "keras_elmo.ops.distinct_input_products": "keras_elmo.ops.bilstm_layouts",
    "keras_elmo.export.saved_model_check": "keras_elmo.export.saved_model",
    "keras_elmo.text.batch_to_ids": "keras_elmo.text.char_vocab",
    "keras_elmo.text.unicode_lexicon": "keras_elmo.text.char_vocab",
    "keras_elmo.text.lexicon_ops": "keras_elmo.text.char_vocab",
    "keras_elmo.text.char_ops": "keras_elmo.text.char_vocab",
    **dict.fromkeys(
        [
            "keras_elmo.weights.tf_checkpoint",
            "keras_elmo.weights.tfhub_checkpoint",
            "keras_elmo.weights.bilm_tf_checkpoint",
        ],
        "keras_elmo.weights.tf_checkpoints",
    ),
    **dict.fromkeys(
        [
            "keras_elmo.layers.sentence_boundaries",
            "keras_elmo.layers.unique_tokens",
        ],
        "keras_elmo.layers.token_sequence",
    ),
    "keras_elmo.utils.validation": "keras_elmo.utils",
    "keras_elmo.embedding.embed_lines": "keras_elmo.embedding.batching",
    "keras_elmo.embedding.runners": "keras_elmo.embedding.embedder",
    "keras_elmo.layers.highway": "keras_elmo.layers.char_cnn_embedding",
    **dict.fromkeys(
        [
            "keras_elmo.layers.character_ids",
            "keras_elmo.layers.lexicon_lookup",
            "keras_elmo.layers.unicode_character_ids",
            "keras_elmo.layers.word_ids",
        ],
        "keras_elmo.layers.token_ids",
    ),
    "keras_elmo.layers.next_token_states": "keras_elmo.layers.lm_softmax",
    "keras_elmo.presets.model_formats": "keras_elmo.presets.sources",
    "keras_elmo.utils.serving_layout": "keras_elmo.presets.sources",
    **dict.fromkeys(
        [
            "keras_elmo.config.options_json",
            "keras_elmo.config.options_lexicons",
            "keras_elmo.config.options_rules",
        ],
        "keras_elmo.config.options",
    ),
    **dict.fromkeys(
        [
            "keras_elmo.weights.hdf5_reader",
            "keras_elmo.weights.hdf5_ports",
            "keras_elmo.weights.bilm_hdf5",
            "keras_elmo.weights.hdf5_shapes",
            "keras_elmo.weights.softmax_hdf5",
            "keras_elmo.weights.model_files",
        ],
        "keras_elmo.weights.hdf5",
    ),
    **dict.fromkeys(
        [
            "keras_elmo.models.bilm_inputs",
            "keras_elmo.models.bilm_outputs",
            "keras_elmo.models.bilm_state",
        ],
        "keras_elmo.models.bilm",
    ),
    "keras_elmo.models.bilm_lexicon": "keras_elmo.models.token_encoder",
    **dict.fromkeys(
        [
            "keras_elmo.models.bilm_loaders",
            "keras_elmo.models.checkpoint_bilm",
            "keras_elmo.models.model_folder",
        ],
        "keras_elmo.models.bilm_io",
    ),
    **dict.fromkeys(
        [
            "keras_elmo.models.bilm_language_model",
            "keras_elmo.models.lm_substitutes",
            "keras_elmo.models.loading",
        ],
        "keras_elmo.models.language_model",
    ),
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a path of `MOVED_MODULES` as its new module, warning."""

    def find_spec(self, name, path=None, target=None):
        if name in MOVED_MODULES:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return None  # a placeholder; `exec_module` swaps in the new module

    def exec_module(self, module):
        new = MOVED_MODULES[module.__name__]
        warnings.warn(
            f"{module.__name__} is deprecated: import {new}.",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system returns what `sys.modules` holds for the name
        # once this returns: the new module itself, not a copy.
        sys.modules[module.__name__] = importlib.import_module(new)


if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModuleFinder())

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
    "export_word2vec",
]


_PORTABLE = ("export_portable", "export_word2vec")


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
    from keras_elmo.export.saved_model import export_saved_model
    from keras_elmo.models.bilm import BiLM
    from keras_elmo.models.elmo_layer import ElmoLayer
    from keras_elmo.models.language_model import BiLMLanguageModel
    from keras_elmo.text.char_vocab import batch_to_ids
    from keras_elmo.text.token_inputs import pad_tokens

    globals().update(
        layers=importlib.import_module("keras_elmo.layers"),
        BiLMConfig=BiLMConfig,
        Embedder=Embedder,
        export_saved_model=export_saved_model,
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
    if name in _PORTABLE:
        # Imported on first use: the package's import does not load the
        # portable exporter, so a change there concerns its users only.
        from keras_elmo.export import portable

        return getattr(portable, name)
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
