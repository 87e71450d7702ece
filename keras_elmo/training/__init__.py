"""Training: losses, strategies, the distributed loop, checkpoints."""

from keras_elmo.training.stream_evaluate import stream_perplexity
from keras_elmo.training.training_config import TrainingConfig

__all__ = ["TrainingConfig", "stream_perplexity"]
