"""Plateau decay, early stopping and the best checkpoint, as rules in code."""

import json
import math
import os

import numpy as np
import pytest

from keras_elmo.training.checkpoints import TrainingState
from keras_elmo.training.evaluate import ValidationRules
from keras_elmo.training.trainer import Trainer
from keras_elmo.training.training_config import TrainingConfig
from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import VALID


def rules_config(**overrides):
    settings = dict(
        train="unused",
        vocab="unused",
        out_dir="unused",
        valid="valid.txt",
        learning_rate=1.0,
        lr_schedule="plateau",
        plateau_factor=0.5,
        plateau_threshold=0.05,
        early_stopping_patience=2,
        early_stopping_min_delta=0.01,
    )
    settings.update(overrides)
    return TrainingConfig(**settings)


def test_rules_decide_from_the_relative_gain_over_the_best():
    config = rules_config()
    rules = ValidationRules(config)
    state = TrainingState(config.learning_rate)
    # (validation perplexity, expected decisions, rate afterwards)
    readings = [
        (200.0, dict(improved=True, decayed=False, stop=False), 1.0),
        # gain 0.10 >= 0.05: keep the rate
        (180.0, dict(improved=True, decayed=False, stop=False), 1.0),
        # gain 0.02 < 0.05: halve; >= 0.01: no patience used
        (176.4, dict(improved=True, decayed=True, stop=False), 0.5),
        # worse than the best: gain < 0, decay, one epoch without gain
        (177.0, dict(improved=False, decayed=True, stop=False), 0.25),
        # gain 0.005 < 0.01 again: the second epoch in a row: stop
        (175.5, dict(improved=True, decayed=True, stop=True), 0.125),
    ]
    for perplexity, expected, rate in readings:
        decisions = rules.after_epoch(state, perplexity)
        assert {k: decisions[k] for k in expected} == expected, perplexity
        assert float(state.learning_rate.numpy()) == rate
    np.testing.assert_allclose(decisions["gain"], (176.4 - 175.5) / 176.4)
    assert float(state.best_valid.numpy()) == 175.5
    assert bool(state.stopped.numpy())


def test_a_gain_resets_the_patience_and_the_epoch_schedule_ignores_plateaus():
    config = rules_config(lr_schedule="epoch", lr_decay=0.5, lr_decay_start=3)
    rules = ValidationRules(config)
    state = TrainingState(config.learning_rate)
    for perplexity in (100.0, 99.9, 90.0, 89.95):
        decisions = rules.after_epoch(state, perplexity)
        assert not decisions["decayed"] and not decisions["stop"]
    assert int(state.epochs_without_gain.numpy()) == 1
    assert [rules.learning_rate(state, e) for e in range(4)] == [
        1.0,
        1.0,
        0.5,
        0.25,
    ]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(lr_schedule="cosine"), "`lr_schedule`"),
        (dict(plateau_factor=1.0), "`plateau_factor`"),
        (dict(plateau_threshold=-0.1), "`plateau_threshold`"),
        (dict(early_stopping_patience=0), "`early_stopping_patience`"),
        (dict(early_stopping_min_delta=math.nan), "`early_stopping_min_delta`"),
        (dict(valid=None), "pass `valid`"),
    ],
)
def test_bad_rule_settings_name_the_setting(overrides, message):
    with pytest.raises(ValueError, match=message):
        rules_config(**overrides)


@pytest.mark.large
def test_trainer_writes_the_best_epoch_and_resumes_the_rules(
    sample_vocab, tmp_path
):
    """A rate high enough to overshoot: the rules decay, stop early and
    write the best epoch's weights, and a second run into the same
    directory keeps the history and changes nothing."""
    out = str(tmp_path / "run")
    config = TrainingConfig(
        train=TRAIN,
        valid=VALID,
        vocab=sample_vocab,
        out_dir=out,
        model="tiny",
        epochs=8,
        batch_size=32,
        steps_per_epoch=6,
        optimizer="adam",
        learning_rate=0.01,
        lr_schedule="plateau",
        plateau_threshold=0.2,
        early_stopping_patience=1,
        early_stopping_min_delta=0.15,
        checkpoint_every=1000,
        verbose=False,
    )
    history = Trainer(config).train()
    rates = [h["learning_rate"] for h in history]
    for before, after, h in zip(rates, rates[1:], history):
        assert after == (before * 0.5 if h["decayed"] else before)
    assert history[-1]["stop"] == (len(history) < 8)
    valid = [h["valid_perplexity"] for h in history]
    best_epoch = int(np.argmin(valid)) + 1
    assert [h["best"] for h in history] == [
        v < min(valid[:i], default=np.inf) for i, v in enumerate(valid)
    ]
    with open(os.path.join(out, "history.json")) as f:
        assert json.load(f) == history

    # The written model is the best epoch's: its validation perplexity.
    from keras_elmo.training.evaluate import evaluate_model

    again = Trainer(config)
    assert again.train() == history  # finished: nothing more to run
    score = evaluate_model(again.model, again.vocabulary, VALID, batch_size=32)
    np.testing.assert_allclose(
        score["perplexity"], valid[best_epoch - 1], rtol=1e-5
    )
