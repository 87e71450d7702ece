"""The presets table: every preset, counts from the options, docs in sync."""

import os

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.presets import available_presets
from keras_elmo.presets import preset_dir
from keras_elmo.presets import published as published_archives
from keras_elmo.presets.published import PUBLISHED_PRESETS
from keras_elmo.presets.published import parameter_count
from keras_elmo.presets.table import presets_table

README = os.path.join(
    os.path.dirname(__file__), os.pardir, os.pardir, "README.md"
)
FULL_TABLE_DOC = os.path.join(
    os.path.dirname(__file__), os.pardir, os.pardir, "docs", "PRESETS.md"
)


def test_cli_presets_markdown_prints_the_table_with_every_preset(capsys):
    assert main(["presets", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out == presets_table()
    for name in list(PUBLISHED_PRESETS) + available_presets():
        assert f"| `{name}` |" in out


def test_cli_presets_prints_aligned_columns_with_what_is_cached(
    capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv("KERAS_ELMO_CACHE", str(tmp_path))
    folder = tmp_path / "elmo_2x1024_en"
    folder.mkdir()
    (folder / ".verified.json").write_text("{}")
    assert main(["presets"]) == 0
    table, notes = capsys.readouterr().out.split("\n\n", 1)
    lines = table.splitlines()
    assert "elmo_small_en and elmo_2x1024_en share the biLSTM" in notes
    assert lines[0].split() == [
        "Name",
        "Architecture",
        "Params",
        "Cached",
        "Training",
        "data",
    ]
    column = lines[0].index("Cached")
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == set(PUBLISHED_PRESETS) | set(available_presets()) | (
        set(published_archives.PUBLISHED_ARCHIVES)
    )
    cached = {name: row[column:].split()[0] for name, row in rows.items()}
    assert cached["elmo_small_en"] == "shipped"
    assert cached["elmo_2x1024_en"] == "yes"
    assert cached["elmo_2x4096_en"] == "no"
    assert max(len(line) for line in lines + notes.splitlines()) <= 100


def test_docs_table_matches_the_cli():
    with open(FULL_TABLE_DOC, encoding="utf-8") as f:
        assert presets_table() in f.read(), "run: keras-elmo presets --markdown"


def test_readme_short_table_names_presets_with_their_counts():
    with open(README, encoding="utf-8") as f:
        rows = [line.split(" | ") for line in f if line.startswith("| `")]
    assert len(rows) >= 4
    counts = {m.name: m.parameter_count for m in PUBLISHED_PRESETS.values()}
    counts["elmo_small_en"] = parameter_count(
        keras_elmo.BiLMConfig.from_options_json(
            os.path.join(preset_dir("elmo_small_en"), "options.json")
        )
    )
    for row in rows:
        name = row[0].strip("| `")
        assert name in counts, name
        assert row[2] == f"{counts[name] / 1e6:.1f}M", name


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


def test_presets_say_why_the_two_2x1024_models_differ(capsys):
    # Same biLSTM, other character CNN: the note names both filter
    # counts, both sizes and the highway layers' share, from the options.
    from keras_elmo.presets.table import same_lstm_notes

    small = keras_elmo.BiLMConfig.from_options_json(
        os.path.join(preset_dir("elmo_small_en"), "options.json")
    )
    big = PUBLISHED_PRESETS["elmo_2x1024_en"].config
    assert (small.num_filters, big.num_filters) == (512, 2048)
    highway = 2 * (2048**2 + 2048) - 2 * (512**2 + 512)
    assert highway == 7_867_392
    difference = parameter_count(big) - parameter_count(small)
    assert f"{difference / 1e6:.1f}M" == "8.2M"
    assert same_lstm_notes() == [
        "`elmo_small_en` and `elmo_2x1024_en` share the biLSTM (2x1024, "
        "P=128); their character CNNs differ: 512 filters of widths 1-6 "
        "against 2048 of widths 1-7, hence 5.4M against 13.6M weights "
        "(7.9M of the 8.2M difference in the highway layers, 2 * (F^2 + F) "
        "weights each for F filters)."
    ]
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n", 1)[0].splitlines()
    rows = {line.split()[0]: line for line in table}
    assert "  2x1024, P=128, 512cnn, 1hw  " in rows["elmo_small_en"]
    assert "  2x1024, P=128, 2048cnn, 1hw  " in rows["elmo_2x1024_en"]
    assert " ".join(out.split("\n\n", 1)[1].split()) == (
        same_lstm_notes()[0].replace("`", "")
    )
