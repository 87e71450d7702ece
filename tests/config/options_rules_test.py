"""options.json problems are named in the file's words: key path, value,
what is allowed."""

import json
import logging

import pytest

import keras_elmo
from keras_elmo.config import options as options_rules


def tiny_options():
    return keras_elmo.BiLMConfig.from_architecture("tiny").to_options_dict()


def load(tmp_path, edit):
    options = tiny_options()
    edit(options)
    path = tmp_path / "options.json"
    path.write_text(json.dumps(options))
    return keras_elmo.BiLMConfig.from_options_json(str(path)), str(path)


def setter(section, key, value):
    def edit(options):
        options[section][key] = value

    return edit


BAD = [
    ("lstm", "dim", -4, "`lstm.dim` is -4", "an integer >= 1"),
    ("lstm", "dim", 0, "`lstm.dim` is 0", "an integer >= 1"),
    ("lstm", "projection_dim", 0, "`lstm.projection_dim` is 0", ">= 1"),
    ("lstm", "n_layers", -1, "`lstm.n_layers` is -1", "an integer >= 1"),
    ("lstm", "cell_clip", 0, "`lstm.cell_clip` is 0", "a number > 0"),
    ("lstm", "proj_clip", -3, "`lstm.proj_clip` is -3", "null (no clipping)"),
    ("char_cnn", "n_highway", -1, "`char_cnn.n_highway` is -1", ">= 0"),
    (
        "char_cnn",
        "activation",
        "gelu",
        "`char_cnn.activation` is 'gelu'",
        '"relu" or "tanh"',
    ),
    (
        "char_cnn",
        "n_characters",
        300,
        "`char_cnn.n_characters` is 300",
        "261 or 262",
    ),
    (
        "char_cnn",
        "max_characters_per_token",
        40,
        "`char_cnn.max_characters_per_token` is 40",
        "50 (the character ids' fixed token width)",
    ),
    ("char_cnn", "filters", [], "`char_cnn.filters` is []", "non-empty"),
    (
        "char_cnn",
        "filters",
        [[1, 4], [60, 8]],
        "`char_cnn.filters[1]` is [60, 8]",
        "1 <= width <= 50 and num_filters >= 1",
    ),
    (
        "char_cnn",
        "filters",
        [[2, 0]],
        "`char_cnn.filters[0]` is [2, 0]",
        "num_filters >= 1",
    ),
]


@pytest.mark.parametrize(
    "section, key, value, named, allowed",
    BAD,
    ids=[f"{s}.{k}={v}" for s, k, v, _, _ in BAD],
)
def test_bad_value_names_key_value_and_allowed(
    tmp_path, section, key, value, named, allowed
):
    with pytest.raises(ValueError) as raised:
        load(tmp_path, setter(section, key, value))
    message = str(raised.value)
    assert message.startswith(f"Options file '{tmp_path}/options.json': ")
    assert named in message and allowed in message
    # The internal field name is not what the user reads.
    for internal in ("lstm_units", "num_highway_layers", "char_embedding"):
        assert internal not in message


def test_embedding_dim_is_named_with_its_full_path(tmp_path):
    def edit(options):
        options["char_cnn"]["embedding"]["dim"] = -2

    with pytest.raises(ValueError, match=r"`char_cnn.embedding.dim` is -2"):
        load(tmp_path, edit)


def test_value_is_shown_as_written(tmp_path):
    """A float that converts to an int is shown as the file has it."""
    with pytest.raises(ValueError, match=r"`lstm.dim` is -4.0; expected"):
        load(tmp_path, setter("lstm", "dim", -4.0))


def test_missing_key_names_its_path(tmp_path):
    def edit(options):
        del options["lstm"]["projection_dim"]

    with pytest.raises(ValueError, match=r"missing key `lstm.projection_dim`"):
        load(tmp_path, edit)


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("lstm", "dim", 1),
        ("lstm", "cell_clip", None),
        ("lstm", "proj_clip", 0.5),
        ("char_cnn", "n_highway", 0),
        ("char_cnn", "n_characters", 261),
        ("char_cnn", "filters", [[50, 1]]),
    ],
)
def test_boundary_values_load(tmp_path, section, key, value):
    config, _ = load(tmp_path, setter(section, key, value))
    assert config.to_options_dict()[section][key] == (
        [list(p) for p in value] if key == "filters" else value
    )


def test_unknown_key_warns_with_the_closest_known_key(tmp_path, caplog):
    def edit(options):
        options["lstm"]["n_layer"] = 3

    with caplog.at_level(logging.WARNING, logger=options_rules.__name__):
        config, path = load(tmp_path, edit)
    assert config.num_layers == 2  # the typo'd key is not read
    assert (
        f"{path!r}: unknown key `lstm.n_layer` is ignored (did you mean "
        "`lstm.n_layers`?)"
    ) in caplog.text


def test_every_rule_key_is_an_options_key():
    options = tiny_options()
    for key in options_rules.RULES:
        node = options
        for part in key.split("."):
            node = node[part]
