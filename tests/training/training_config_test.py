"""`TrainingConfig` validation."""

import pytest

from keras_elmo.training.training_config import TrainingConfig


@pytest.mark.parametrize(
    "name", ["epochs", "batch_size", "max_tokens", "shuffle_buffer"]
)
@pytest.mark.parametrize("value", [0, -3, 2.5])
def test_counts_must_be_positive_ints(name, value):
    with pytest.raises(ValueError, match=name) as error:
        TrainingConfig(train="t", vocab="v", out_dir="o", **{name: value})
    assert repr(value) in str(error.value) or str(value) in str(error.value)


def test_learning_rate_decays_once_per_epoch_from_the_start_epoch():
    config = TrainingConfig(
        train="t",
        vocab="v",
        out_dir="o",
        learning_rate=0.8,
        lr_decay=0.5,
        lr_decay_start=3,
    )
    rates = [config.learning_rate_at(epoch) for epoch in range(5)]
    assert rates == [0.8, 0.8, 0.4, 0.2, 0.1]
    constant = TrainingConfig(train="t", vocab="v", out_dir="o")
    assert {constant.learning_rate_at(e) for e in range(4)} == {2e-3}
    bilm_tf = TrainingConfig(
        train="t", vocab="v", out_dir="o", recipe="bilm-tf"
    )
    assert {bilm_tf.learning_rate_at(e) for e in range(4)} == {0.2}


@pytest.mark.parametrize("value", [0.0, -0.5, 1.5])
def test_lr_decay_must_be_a_factor_in_0_1(value):
    with pytest.raises(ValueError, match="lr_decay") as error:
        TrainingConfig(train="t", vocab="v", out_dir="o", lr_decay=value)
    assert repr(value) in str(error.value)


def test_recipes_fill_only_the_settings_left_unset():
    default = TrainingConfig(train="t", vocab="v", out_dir="o", valid="d")
    assert (default.optimizer, default.learning_rate, default.dropout) == (
        "adam",
        2e-3,
        0.1,
    )
    assert (default.num_sampled, default.batch_size) == (0, 64)
    # "auto": decide from validation when there is a validation set.
    assert default.lr_schedule == "plateau"
    no_valid = TrainingConfig(train="t", vocab="v", out_dir="o")
    assert no_valid.lr_schedule == "epoch"
    decay = TrainingConfig(
        train="t", vocab="v", out_dir="o", valid="d", lr_decay=0.5
    )
    assert decay.lr_schedule == "epoch"  # an explicit decay asks for it
    bilm_tf = TrainingConfig(
        train="t", vocab="v", out_dir="o", recipe="bilm-tf", dropout=0.3
    )
    assert (bilm_tf.optimizer, bilm_tf.learning_rate) == ("adagrad", 0.2)
    assert (bilm_tf.num_sampled, bilm_tf.batch_size) == (8192, 128)
    assert bilm_tf.dropout == 0.3  # an explicit setting wins
    with pytest.raises(ValueError, match="`recipe`.*'bilm-tf'.*got 'bert'"):
        TrainingConfig(train="t", vocab="v", out_dir="o", recipe="bert")


def test_architectures_by_the_names_that_say_their_shape():
    # The default is named for what it is: elmo_2x1024_en's shape; the
    # shipped elmo_small_en's has its own name (512 filters, not 2048).
    import dataclasses
    import os

    from keras_elmo.config import BiLMConfig
    from keras_elmo.presets import preset_dir
    from keras_elmo.presets.published import PUBLISHED_PRESETS
    from keras_elmo.training.training_config import TrainingConfig
    from keras_elmo.training.training_config import resolve_model_config

    default = dataclasses.fields(TrainingConfig)
    default = next(f.default for f in default if f.name == "model")
    assert default == "2x1024_128_2048cnn_1xhighway"
    config = TrainingConfig(train="t", vocab="v", out_dir="o")
    assert resolve_model_config(config) == (
        PUBLISHED_PRESETS["elmo_2x1024_en"].config
    )
    assert resolve_model_config(config) == BiLMConfig.from_architecture("small")
    shipped = BiLMConfig.from_options_json(
        os.path.join(preset_dir("elmo_small_en"), "options.json")
    )
    assert BiLMConfig.from_architecture("2x1024_128_512cnn_1xhighway") == (
        shipped
    )
    for name, preset in [
        ("2x2048_256_2048cnn_1xhighway", "elmo_2x2048_en"),
        ("2x4096_512_2048cnn_2xhighway", "elmo_2x4096_en"),
    ]:
        assert BiLMConfig.from_architecture(name) == (
            PUBLISHED_PRESETS[preset].config
        )
    with pytest.raises(ValueError, match=r"'2x1024_128_512cnn_1xhighway'"):
        BiLMConfig.from_architecture("2x1024")


def test_train_config_flag_is_the_old_name_of_architecture(capsys):
    import argparse

    from keras_elmo.cli import train

    parser = argparse.ArgumentParser()
    train.add_arguments(parser)
    base = ["--train", "t", "--vocab", "v", "--out", "o"]
    args = parser.parse_args(base)
    assert args.config_model == "2x1024_128_2048cnn_1xhighway"
    assert capsys.readouterr().err == ""
    args = parser.parse_args(base + ["--architecture", "tiny"])
    assert args.config_model == "tiny"
    assert capsys.readouterr().err == ""
    args = parser.parse_args(base + ["--config", "tiny"])
    assert args.config_model == "tiny"
    assert capsys.readouterr().err == (
        "keras-elmo train: --config is deprecated; use --architecture (the "
        "same values).\n"
    )
