"""A tiny biLM really learns: validation perplexity far below unigram."""

import json
import os

import numpy as np
import pytest

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.training.evaluate import unigram_perplexity
from keras_elmo.training.trainer import Trainer
from keras_elmo.training.training_config import TrainingConfig
from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import VALID
from tests.training.training_helpers import run_cli


@pytest.mark.large
def test_tiny_bilm_beats_unigram_and_cli_evaluates(sample_vocab, tmp_path):
    out = str(tmp_path / "run")
    config = TrainingConfig(
        train=TRAIN,
        valid=VALID,
        vocab=sample_vocab,
        out_dir=out,
        model="tiny",
        epochs=3,
        batch_size=32,
        optimizer="adam",
        learning_rate=0.01,
        lr_decay=0.5,
        lr_decay_start=3,
        checkpoint_every=1000,
        verbose=False,
    )
    trainer = Trainer(config)
    history = trainer.train()
    assert [h["epoch"] for h in history] == [1, 2, 3]
    # The third epoch ran at the decayed rate, which the optimizer holds.
    assert [h["learning_rate"] for h in history] == [0.01, 0.01, 0.005]
    np.testing.assert_allclose(
        float(trainer.optimizer.learning_rate), 0.005, rtol=1e-6
    )
    # Training loss falls epoch over epoch.
    assert history[2]["loss"] < history[1]["loss"] < history[0]["loss"]
    unigram = unigram_perplexity(TRAIN, VALID, Vocabulary.load(sample_vocab))
    assert 250 < unigram < 350  # add-one unigram on this sample: ~300
    assert history[-1]["valid_perplexity"] < 0.75 * unigram

    # The output directory is complete and `evaluate` reads it.
    for name in (
        "options.json",
        "weights.hdf5",
        "softmax.hdf5",
        "vocab.txt",
        "bilm.keras",
    ):
        assert os.path.exists(os.path.join(out, name)), name
    assert os.listdir(os.path.join(out, "logs"))
    done = run_cli("evaluate", "--data", VALID, "--model", out, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(result) == [
        "backward_perplexity",
        "forward_perplexity",
        "oov_rate",
        "perplexity",
        "tokens",
    ]
    np.testing.assert_allclose(
        result["perplexity"], history[-1]["valid_perplexity"], rtol=1e-4
    )
    np.testing.assert_allclose(
        result["perplexity"],
        np.sqrt(result["forward_perplexity"] * result["backward_perplexity"]),
        rtol=1e-9,
    )
    assert 0.0 < result["oov_rate"] < 0.2
    assert result["tokens"] > 10000

    # --stream: the same predictions, scored with carried states.
    done = run_cli(
        "evaluate", "--data", VALID, "--model", out, "--json", "--stream"
    )
    assert done.returncode == 0, done.stderr
    stream = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(stream) == sorted(result)
    assert stream["tokens"] == result["tokens"]
    assert stream["oov_rate"] == pytest.approx(result["oov_rate"])
    assert stream["perplexity"] != pytest.approx(result["perplexity"])
    assert stream["perplexity"] < 0.75 * unigram
