"""Mixed-precision training: bf16 / fp16 compute, fp32 weights and softmax."""

import numpy as np
import pytest

from keras_elmo.training.trainer import Trainer
from keras_elmo.training.training_config import TrainingConfig
from tests.training.training_helpers import TRAIN


@pytest.mark.large
@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_mixed_precision_trains(precision, sample_vocab, tmp_path):
    config = TrainingConfig(
        train=TRAIN,
        vocab=sample_vocab,
        out_dir=str(tmp_path / precision),
        model="tiny",
        batch_size=16,
        steps_per_epoch=6,
        mixed_precision=precision,
        num_sampled=64,
        verbose=False,
    )
    trainer = Trainer(config)
    history = trainer.train()
    assert history[0]["steps"] == 6 and np.isfinite(history[0]["loss"])
    backbone = trainer.model.backbone
    assert backbone.bilstm.compute_dtype == precision
    assert all(w.dtype == "float32" for w in trainer.model.weights)
    assert trainer.model.softmax.compute_dtype == "float32"
    expected_scale = 2.0**15 if precision == "float16" else 1.0
    assert float(trainer.loss_scale.value.numpy()) <= expected_scale
