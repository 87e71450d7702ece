"""The presets table: every preset, counts from the options, docs in sync."""

import os

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.presets import available_presets
from keras_elmo.presets import preset_dir
from keras_elmo.presets.published import PUBLISHED_PRESETS
from keras_elmo.presets.published import parameter_count
from keras_elmo.presets.table import presets_table

DOCS = os.path.join(
    os.path.dirname(__file__), os.pardir, os.pardir, "README.md"
)
FULL_TABLE_DOC = os.path.join(
    os.path.dirname(__file__), os.pardir, os.pardir, "docs", "PRESETS.md"
)


def test_cli_presets_prints_the_table_with_every_preset(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert out == presets_table()
    for name in list(PUBLISHED_PRESETS) + available_presets():
        assert f"| `{name}` |" in out


def test_docs_table_matches_the_cli():
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    assert presets_table(archives=False) in text, "run: keras-elmo presets"
    with open(FULL_TABLE_DOC, encoding="utf-8") as f:
        assert presets_table() in f.read(), "run: keras-elmo presets"


@pytest.mark.parametrize("source", ["tiny", "elmo_small_en"])
def test_parameter_count_equals_the_built_model(source):
    if source == "tiny":
        config = keras_elmo.BiLMConfig.from_architecture("tiny")
    else:
        config = keras_elmo.BiLMConfig.from_options_json(
            os.path.join(preset_dir(source), "options.json")
        )
    assert parameter_count(config) == keras_elmo.BiLM(config).count_params()


def test_counts_round_to_the_figures_allennlp_publishes():
    # AllenNLP's ELMo page: 13.6M, 28.0M, 93.6M, 93.6M parameters.
    published = {
        "elmo_2x1024_en": "13.6",
        "elmo_2x2048_en": "28.0",
        "elmo_2x4096_en": "93.6",
        "elmo_2x4096_5.5b_en": "93.6",
    }
    for name, millions in published.items():
        count = PUBLISHED_PRESETS[name].parameter_count
        assert f"{count / 1e6:.1f}" == millions, name
