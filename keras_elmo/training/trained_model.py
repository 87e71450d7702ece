"""The files a finished training run leaves in its output folder."""

import logging
import os

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


def finished_model(
    out_dir, completed_epochs, epochs, checkpoint, stopped=False
):
    """Whether `out_dir` already holds the finished model of this run, for
    either trainer: its newest checkpoint (the file `checkpoint`) has
    completed `epochs` (or stopped early), and every model file exists
    and was written after that checkpoint (a run killed between its last
    checkpoint and its model files, or one that trained more epochs
    since, is not finished). Such a rerun trains and writes nothing."""
    if checkpoint is None or not os.path.isfile(checkpoint):
        return False
    if completed_epochs < epochs and not stopped:
        return False
    saved = os.stat(checkpoint).st_mtime_ns
    for path in model_files.model_paths(out_dir).values():
        if not os.path.isfile(path) or os.stat(path).st_mtime_ns < saved:
            return False
    return True
