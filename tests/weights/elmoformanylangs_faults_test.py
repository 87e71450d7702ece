"""Faults in an ELMoForManyLangs folder's files are refused naming the
file and the line or the key as the file spells it, and an architecture
is checked against its limits and its weights before a model is built."""

import json
import os
import shutil
import time

import numpy as np
import pytest

import keras_elmo
from keras_elmo.weights import elmoformanylangs as efml
from tests import efml_reference as ref
from tests.weights.torch_pickle_bounds_test import write_zip

ARCHITECTURE = {"char": "tiny_cnn_4_0.json", "word": "tiny_cnn_4_6.json"}


def _copy(tmp_path, model="char"):
    folder = tmp_path / model
    shutil.copytree(ref.folder(model), folder)
    return folder


def _edit_line(path, number, text):
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[number - 1] = text
    path.write_text("\n".join(lines), encoding="utf-8")


def _refused(folder, *patterns):
    """`read_folder` and `BiLM.from_elmoformanylangs` both refuse with an
    `ELMoForManyLangsFileError` whose message holds `patterns` and no
    internal field name."""
    errors = []
    for load in (efml.read_folder, keras_elmo.BiLM.from_elmoformanylangs):
        with pytest.raises(efml.ELMoForManyLangsFileError) as info:
            load(str(folder))
        message = str(info.value)
        for pattern in patterns:
            assert pattern in message, (pattern, message)
        for internal in ("char_lexicon", "word_lexicon", "lstm_units"):
            assert internal not in message, message
        errors.append(info.value)
    return errors[0]


@pytest.mark.parametrize(
    "model, name, number, text, found",
    [
        # the package's torch lookup fails on `-3` only when `☃` comes
        ("char", "char.dic", 5, "\u2603\t-3", "the id an integer >= 0"),
        ("char", "char.dic", 7, "\u2603\t\u00b2", "the id an integer >= 0"),
        (
            "char",
            "char.dic",
            9,
            "\u2603\t99999",
            "has id 99999; expected an id ",
        ),
        # the padding id (69) taken by a character
        ("char", "char.dic", 3, "\u2603\t69", "the id of '<pad>'"),
        (
            "word",
            "word.dic",
            6,
            "\u2603\t19",
            "has id 19; expected an id below",
        ),
        ("word", "word.dic", 4, "\u2603 7", "expected `token<TAB>id`"),
    ],
    ids=["negative", "superscript", "past-table", "pad", "word-id", "tab"],
)
def test_a_bad_lexicon_line_is_named_by_file_and_line(
    model, name, number, text, found, tmp_path
):
    folder = _copy(tmp_path, model)
    _edit_line(folder / name, number, text)
    path = str(folder / name)
    error = _refused(folder, f"Lexicon {path!r}, line {number}:", found)
    assert (error.path, error.line) == (path, number)


def test_a_lexicon_that_is_not_utf8_names_its_line(tmp_path):
    folder = _copy(tmp_path)
    data = (folder / "char.dic").read_bytes().split(b"\n")
    data[3] = b"\xff\t3"
    (folder / "char.dic").write_bytes(b"\n".join(data))
    path = str(folder / "char.dic")
    error = _refused(folder, f"Lexicon {path!r}, line 4: not UTF-8")
    assert error.line == 4


@pytest.mark.parametrize(
    "section, key, value, expected",
    [
        ("encoder", "dim", -4, "an integer from 1 to 32768"),
        ("encoder", "dim", 0, "an integer from 1 to 32768"),
        ("encoder", "dim", 4194304, "an integer from 1 to 32768"),
        ("encoder", "dim", 8.5, "an integer from 1 to 32768"),
        ("encoder", "projection_dim", True, "an integer from 1 to 8192"),
        ("encoder", "n_layers", 1000000, "an integer from 1 to 16"),
        ("token_embedder", "char_dim", "4", "an integer from 1 to 1024"),
        ("token_embedder", "n_highway", -1, "an integer from 0 to 16"),
        ("token_embedder", "word_dim", -6, "an integer from 0 to 4096"),
        ("encoder", "cell_clip", -3, "a number > 0, 0 or null"),
        ("token_embedder", "activation", "gelu", "'relu' or 'tanh'"),
    ],
)
def test_an_absurd_architecture_value_is_refused_by_its_key(
    section, key, value, expected, tmp_path
):
    folder = _copy(tmp_path)
    path = folder / ARCHITECTURE["char"]
    architecture = json.loads(path.read_text())
    architecture[section][key] = value
    path.write_text(json.dumps(architecture))
    start = time.thread_time()
    error = _refused(
        folder,
        f"ELMoForManyLangs architecture {str(path)!r}: `{section}.{key}` "
        f"is {value!r}; expected {expected}",
    )
    assert time.thread_time() - start < 5.0
    assert (error.path, error.key) == (str(path), f"{section}.{key}")


@pytest.mark.parametrize(
    "filters, key",
    [
        ([[1, 4], [2, -4]], "token_embedder.filters[1]"),
        ([[0, 4]], "token_embedder.filters[0]"),
        ([[51, 4]], "token_embedder.filters[0]"),
        ([[1, 4, 9]], "token_embedder.filters[0]"),
        ([], "token_embedder.filters"),
    ],
)
def test_bad_filters_are_refused_by_their_index(filters, key, tmp_path):
    folder = _copy(tmp_path)
    path = folder / ARCHITECTURE["char"]
    architecture = json.loads(path.read_text())
    architecture["token_embedder"]["filters"] = filters
    path.write_text(json.dumps(architecture))
    error = _refused(folder, f"`{key}` is ")
    assert error.key == key


@pytest.mark.parametrize("model", ref.MODELS)
def test_the_implied_parameter_count_is_the_files_own(model):
    folder = ref.folder(model)
    architecture, source = efml.find_architecture(folder)
    dims = efml.architecture_dims(architecture, source)
    lexicons = [efml.read_lexicon(os.path.join(folder, "char.dic"))]
    words = os.path.join(folder, "word.dic")
    lexicons.append(efml.read_lexicon(words) if model == "word" else {})
    stored = efml.read_folder(folder)
    held = [
        sum(a.size for a in state.values())
        for state in (stored.token_embedder, stored.encoder)
    ]
    expected = efml.expected_parameters(dims, *map(len, lexicons))
    assert expected == tuple(held)
    # 72 characters x 4, the filters, 2 highways over 16, the projection
    assert (
        expected[0]
        == {
            "char": 288 + 160 + 1088 + 136,
            "word": 288 + 19 * 6 + 160 + 1088 + 184,
        }[model]
    )
    assert expected[1] == 2 * 2 * (2 * 4 * 8 * 8 + 32 + 64)


def test_an_architecture_far_larger_than_its_weights_is_refused(tmp_path):
    # Within every limit, and 4 GiB of float32 biLM weights (the shipped
    # 4096 / 512 design), next to pickles of a few kB.
    folder = _copy(tmp_path)
    path = folder / ARCHITECTURE["char"]
    architecture = json.loads(path.read_text())
    architecture["encoder"].update(dim=4096, projection_dim=512)
    path.write_text(json.dumps(architecture))
    start = time.thread_time()
    with pytest.raises(efml.ELMoForManyLangsFileError) as info:
        efml.read_folder(str(folder))
    assert time.thread_time() - start < 5.0
    dims = efml.architecture_dims(architecture, str(path))
    implied = sum(efml.expected_parameters(dims, 72, 0))
    assert f"{str(path)!r} implies {implied} parameters" in str(info.value)
    assert "hold 4104. The architecture does not belong" in str(info.value)
    assert info.value.path == str(path)


def test_weights_past_the_architecture_are_refused_before_reading(tmp_path):
    # A storage of 100,000 floats (400 kB) where the char model's whole
    # token embedder is 1,672 parameters: at most 2 x 1672 + 4096.
    folder = _copy(tmp_path)
    path = str(folder / "token_embedder.pkl")
    write_zip(
        path,
        {"char_emb_layer.embedding.weight": ("0", 0, (72, 4), (4, 1))},
        {"0": 100000},
    )
    with pytest.raises(ValueError) as info:
        efml.read_folder(str(folder))
    message = str(info.value)
    assert f"Torch file {path!r}" in message
    assert "declare 100000 elements in all" in message
    assert "expected at most 7440" in message
    assert np.prod((72, 4)) < 7440  # the view itself would have fitted
