"""`init_from`: a new training run that starts from another model's weights.

`TrainingConfig.init_from` is `(options.json, weights.hdf5[, softmax.hdf5])`:
the run trains the architecture of that options.json
(`resolve_model_config`), and `load_init_from` copies the weights into the
freshly built `BiLMLanguageModel` before any checkpoint is restored (a
resumed run's checkpoint then overwrites them). Without a softmax file the
softmax, `W: [V, D]` and `b: [V]` for the run's `V`-word vocabulary, keeps
its random initial values.
"""

import logging
import os

from keras_elmo.config import BiLMConfig
from keras_elmo.weights import hdf5 as model_files

logger = logging.getLogger(__name__)


def resolve_model_config(config):
    """The `BiLMConfig` a `TrainingConfig` trains: that of `init_from`'s
    options.json, else `model`'s (an options.json path or an
    architecture name)."""
    if config.init_from:
        return BiLMConfig.from_options_json(config.init_from[0])
    if os.path.exists(config.model):
        return BiLMConfig.from_options_json(config.model)
    return BiLMConfig.from_architecture(config.model)


def load_init_from(model, vocabulary_size, init_from):
    """Loads `init_from`'s files into a built `BiLMLanguageModel`.

    Args:
        model: `BiLMLanguageModel` built from `resolve_model_config`.
        vocabulary_size: int. `V`, the run's vocabulary size (named in
            the warning when no softmax file is given).
        init_from: `(options.json, weights.hdf5[, softmax.hdf5])`, as
            `TrainingConfig.init_from`. The options were read by
            `resolve_model_config`; the weights go into `model.backbone`,
            the softmax (if given) into `model.softmax`, else it stays
            random, with a warning.
    """
    from keras_elmo.weights.hdf5 import load_bilm_hdf5

    _, weights, *rest = init_from
    softmax = rest[0] if rest else None

    load_bilm_hdf5(model.backbone, weights)
    if softmax:
        model_files.load_softmax_hdf5(model.softmax, softmax)
    else:
        logger.warning(
            "Fine-tuning without a softmax file: the softmax for the "
            "%d-word vocabulary starts from random weights, so the "
            "first steps train it from scratch.",
            vocabulary_size,
        )
