"""The files a finished training run leaves in its output folder."""

import logging

from keras_elmo.models.bilm import BiLM
from keras_elmo.utils.atomic import save_keras_atomically
from keras_elmo.weights import model_files

logger = logging.getLogger(__name__)


def write_trained_model(model, vocabulary, out_dir):
    """Writes a trained `BiLMLanguageModel` into `out_dir`, for either
    trainer: options.json + weights.hdf5 (AllenNLP format) of its
    backbone, softmax.hdf5 (`W` `[V, P]` and its bias), vocab.txt, and
    bilm.keras, an inference `BiLM` rebuilt from the AllenNLP files (so
    it holds exactly the weights a user loads from them)."""
    paths = model_files.model_paths(out_dir)
    model.backbone.save_allennlp(paths["options"], paths["weights"])
    model_files.save_softmax_hdf5(model.softmax, paths["softmax"])
    vocabulary.save(paths["vocabulary"])
    inference = BiLM.from_allennlp(paths["options"], paths["weights"])
    save_keras_atomically(inference, paths["keras"])
    logger.info("Wrote the trained model to %s", out_dir)
