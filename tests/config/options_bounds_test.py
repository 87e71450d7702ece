"""Absurd sizes in an options file are refused in milliseconds, before
anything is allocated, naming the file, the key and the value; every
published architecture still loads."""

import dataclasses
import gc
import json
import time

import pytest

import keras_elmo
from keras_elmo.config import options as options_rules


def tiny_options():
    return keras_elmo.BiLMConfig.from_architecture("tiny").to_options_dict()


def write(tmp_path, edit):
    options = tiny_options()
    edit(options)
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    return str(path)


def lstm(key, value):
    return lambda o: o["lstm"].__setitem__(key, value)


def cnn(key, value):
    return lambda o: o["char_cnn"].__setitem__(key, value)


ABSURD = [
    (lstm("dim", 4194304), "`lstm.dim` is 4194304", "<= 65536"),
    (lstm("n_layers", 1000000), "`lstm.n_layers` is 1000000", "<= 64"),
    (
        lstm("projection_dim", 10**9),
        "`lstm.projection_dim` is 1000000000",
        "<= 16384",
    ),
    (cnn("n_highway", 100000), "`char_cnn.n_highway` is 100000", "<= 64"),
    (
        cnn("embedding", {"dim": 65537}),
        "`char_cnn.embedding.dim` is 65537",
        "<= 4096",
    ),
    (
        cnn("filters", [[7, 2**31]]),
        "`char_cnn.filters[0]` is [7, 2147483648]",
        "num_filters <= 65536",
    ),
    (
        cnn("filters", [[1, 1]] * 100000),
        "`char_cnn.filters` is 'a list of 100000 pairs'",
        "at most 64",
    ),
    # Each size allowed, the product not: 2 x 64 x (2P x 4H + ...) params.
    (
        lambda o: o["lstm"].update(
            dim=65536, projection_dim=16384, n_layers=64
        ),
        "the architecture has 1,236,984,615,412 parameters (lstm.dim=65536",
        "at most 1,000,000,000",
    ),
    # Zero and negative: refused as before, as fast.
    (lstm("dim", 0), "`lstm.dim` is 0", ">= 1"),
    (lstm("n_layers", -3), "`lstm.n_layers` is -3", ">= 1"),
]


@pytest.mark.parametrize("edit, named, allowed", ABSURD)
def test_absurd_sizes_refused_fast_naming_file_key_and_value(
    tmp_path, edit, named, allowed
):
    path = write(tmp_path, edit)
    # The bound is on this code's work, not on the collections of the
    # worker's heap that parsing 100,000 small lists triggers (a full
    # collection of what earlier tests left took 2.4 s in one CI worker;
    # the refusal itself takes milliseconds), so the collector is paused.
    gc.disable()
    try:
        start = time.thread_time()
        with pytest.raises(ValueError) as info:
            keras_elmo.BiLMConfig.from_options_json(path)
        assert time.thread_time() - start < 2.0
    finally:
        gc.enable()
    message = str(info.value)
    assert f"Options file {path!r}" in message, message
    assert named in message and allowed in message, message


def test_total_count_in_the_message_is_the_architectures(tmp_path):
    # 2 directions x 64 layers x (W_0 [2P, 4H] + B [4H] + W_P_0 [H, P])
    # for H = 65536, P = 16384, plus tiny's char-CNN, highway, projection.
    h, p = 65536, 16384
    lstm_count = 2 * 64 * (2 * p * 4 * h + 4 * h + h * p)
    rest = 262 * 4 + 300 + 2 * 2 * (28 * 28 + 28) + (28 * p + p)
    assert lstm_count + rest == 1_236_984_615_412


def test_absurd_options_next_to_a_tiny_weights_file(
    reference_weights, tmp_path
):
    # The probe: lstm.dim = 4194304 allocated 2 GiB in 7 s.
    _, weights = reference_weights("tiny")
    path = write(tmp_path, lstm("dim", 4194304))
    start = time.thread_time()
    with pytest.raises(ValueError, match=r"`lstm\.dim` is 4194304"):
        keras_elmo.BiLM.from_allennlp(path, weights)
    assert time.thread_time() - start < 2.0


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("lstm_units", 4194304, "an integer <= 65536"),
        ("num_layers", 1000000, "an integer <= 64"),
        ("num_highway_layers", 65, "an integer <= 64"),
    ],
)
def test_bilm_config_applies_the_same_limits(field, value, expected):
    # Every source of a config (ELMoForManyLangs, a dict, code) is bounded.
    with pytest.raises(ValueError) as info:
        keras_elmo.BiLMConfig(**{field: value})
    assert str(info.value) == (
        f"Received an invalid value for argument `{field}`, expected "
        f"{expected}, got {value}."
    )


def test_bilm_config_refuses_too_many_parameters():
    # The original char-CNN (2048 filters, 2 highway layers, 16 dims).
    h, p, f = 65536, 16384, 2048
    filters = (
        (1, 32),
        (2, 32),
        (3, 64),
        (4, 128),
        (5, 256),
        (6, 512),
        (7, 1024),
    )
    count = 262 * 16 + sum(w * 16 * n + n for w, n in filters)
    count += 2 * 2 * (f * f + f) + (f * p + p)
    count += 2 * 64 * (2 * p * 4 * h + 4 * h + h * p)
    with pytest.raises(ValueError) as info:
        keras_elmo.BiLMConfig(
            lstm_units=65536, projection_dim=16384, num_layers=64
        )
    assert str(info.value).startswith(
        f"BiLMConfig: the architecture has {count:,} parameters "
        "(lstm_units=65536, projection_dim=16384, num_layers=64, 2048 "
        "filters); at most 1,000,000,000 are accepted"
    )


@pytest.mark.parametrize("name", ["tiny", "small", "medium", "original"])
def test_published_architectures_are_within_the_limits(name, tmp_path):
    config = keras_elmo.BiLMConfig.from_architecture(name)
    path = tmp_path / "options.json"
    config.to_options_json(str(path))
    assert keras_elmo.BiLMConfig.from_options_json(str(path)) == config


def test_original_parameter_count_matches_the_built_model():
    # 93,600,848 weights in the built BiLM; the count takes 262 character
    # rows (the file's 261 plus padding): 16 more.
    config = keras_elmo.BiLMConfig.from_architecture("original")
    fields = {
        f.name: getattr(config, f.name) for f in dataclasses.fields(config)
    }
    assert options_rules.parameter_count(fields) == 93_600_848 + 16
