"""Models from any source, as the commands and the `Embedder` need them.

Every function here goes through `keras_elmo.presets.sources.load` (the
one loader over the one resolver) and builds: a `BiLM` or an `ElmoLayer`
(`load_bilm_or_elmo_layer`, for exports that keep a learned mix), or the
language model with its softmax and vocabulary (`load_language_model`,
for perplexity and substitutes).
"""

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm_language_model import BiLMLanguageModel
from keras_elmo.models.bilm_loaders import model_in_keras_file
from keras_elmo.presets import sources as model_sources
from keras_elmo.weights.hdf5 import load_softmax_hdf5


def load_language_model(source, dtype=None):
    """`(BiLMLanguageModel, Vocabulary)` of a model that has its softmax
    (a `keras-elmo train` output, the shipped preset).

    Raises:
        ValueError: the model has no `softmax.hdf5` or no `vocab.txt`
            (weight-only models cannot predict words); the message names
            what is missing.
    """
    return model_sources.load(source, _language_model, dtype=dtype)


def _language_model(resolved, dtype=None):
    missing = [
        name
        for name, path in (
            ("softmax.hdf5", resolved.softmax),
            ("vocab.txt", resolved.vocabulary),
        )
        if path is None
    ]
    if resolved.format != "allennlp" or missing:
        what = ", ".join(missing) or f"a {resolved.format} model"
        raise ValueError(
            f"{resolved.description} has no language-model softmax "
            f"(missing: {what}); predicting words needs options.json, "
            "weights.hdf5, softmax.hdf5 and vocab.txt (a keras-elmo train "
            "output)."
        )
    vocabulary = Vocabulary.load(resolved.vocabulary)
    backbone = BiLM.from_allennlp(
        resolved.options, resolved.weights, dtype=dtype
    )
    model = BiLMLanguageModel(backbone, len(vocabulary), dropout=0.0)
    load_softmax_hdf5(model.softmax, resolved.softmax)
    return model, vocabulary


def load_bilm_or_elmo_layer(source):
    """`(model, description)`: a `BiLM`, or the `ElmoLayer` of a `.keras`
    file holding exactly one (so an export keeps its learned mix)."""
    return model_sources.load(source, bilm_or_elmo_layer)


def bilm_or_elmo_layer(resolved):
    """`load_bilm_or_elmo_layer`'s build step, for a `ResolvedModel`."""
    if resolved.format == "keras":
        return model_in_keras_file(resolved.path, BiLM), resolved.description
    return BiLM.from_resolved(resolved), resolved.description
