"""`BiLM.from_elmoformanylangs` against the real package's `sents2elmo`.

Fixtures: tiny random-weight models written by `elmoformanylangs` 0.0.4
itself (tools/elmoformanylangs_ref/make_fixtures.py), word_dim 6 and 0,
pickles in torch's zip layout and the legacy stream; outputs of
`sents2elmo(output_layer=-2)` (all layers) and `-1` (their average), on
Chinese, English, out-of-lexicon characters, unknown words, over-long
tokens and literal specials.
"""

import keras
import numpy as np
import pytest

import keras_elmo
from keras_elmo.models.bilm_io import write_model_folder
from tests import efml_reference as ref

CASES = [(m, layout) for m in ref.MODELS for layout in ref.LAYOUTS]


@pytest.fixture(scope="module")
def bilms():
    return {
        case: keras_elmo.BiLM.from_elmoformanylangs(ref.folder(*case))
        for case in CASES
    }


@pytest.mark.parametrize("model,layout", CASES)
def test_all_layers_equal_sents2elmo_output_layer_minus_2(bilms, model, layout):
    sentences, expected, _ = ref.reference(model)
    actual = ref.bilm_layers(bilms[(model, layout)], sentences)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == (3, len(sentences[i]), 16)
        ref.assert_relative(a, e)


@pytest.mark.parametrize("model", ref.MODELS)
def test_layer_average_equals_sents2elmo_output_layer_minus_1(bilms, model):
    sentences, _, expected = ref.reference(model)
    actual = ref.bilm_layers(bilms[(model, "legacy")], sentences)
    for a, e in zip(actual, expected):
        ref.assert_relative(a.mean(axis=0), e)


def test_each_sentence_alone_gives_the_batch_output(bilms):
    # Ours is stateless and batch-independent; the reference is the
    # package's first batch (all sentences at once).
    sentences, expected, _ = ref.reference("word")
    bilm = bilms[("word", "zip")]
    for sentence, e in zip(sentences, expected):
        (alone,) = ref.bilm_layers(bilm, [sentence])
        ref.assert_relative(alone, e)


def test_the_two_pickle_layouts_give_identical_weights(bilms):
    for model in ref.MODELS:
        a, b = bilms[(model, "zip")], bilms[(model, "legacy")]
        for x, y in zip(a.weights, b.weights):
            np.testing.assert_array_equal(x.numpy(), y.numpy())


@pytest.mark.parametrize("model", ref.MODELS)
def test_native_folder_reloads_exactly(bilms, model, tmp_path):
    bilm = bilms[(model, "zip")]
    out = write_model_folder(bilm, str(tmp_path / "converted"))
    names = sorted(p.name for p in (tmp_path / "converted").iterdir())
    expected_names = ["char_lexicon.json", "options.json", "weights.hdf5"]
    if model == "word":
        expected_names.append("word_lexicon.json")
    assert names == sorted(expected_names)
    for reloaded in (
        keras_elmo.BiLM.from_preset(out),
        keras_elmo.BiLM.from_allennlp(
            str(tmp_path / "converted" / "options.json"),
            str(tmp_path / "converted" / "weights.hdf5"),
        ),
    ):
        assert reloaded.config == bilm.config
        for x, y in zip(bilm.weights, reloaded.weights):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
    sentences, expected, _ = ref.reference(model)
    for a, e in zip(ref.bilm_layers(reloaded, sentences), expected):
        ref.assert_relative(a, e)


def test_write_model_folder_refuses_a_non_empty_folder(bilms, tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError, match="not empty"):
        write_model_folder(bilms[("char", "zip")], tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_char_ids_input_is_refused_for_a_word_branch_model(bilms):
    bilm = bilms[("word", "zip")]
    with pytest.raises(TypeError, match="word embedding branch"):
        bilm(np.ones((1, 2, 50), "int32"))


def test_char_only_model_takes_its_char_ids_directly(bilms):
    bilm = bilms[("char", "zip")]
    sentences, expected, _ = ref.reference("char")
    ids = bilm.encode_tokens(ref.padded(sentences[:2]))
    out = bilm(np.asarray(ids))
    assert out["lstm_outputs2"].shape[:2] == (2, 7)
    rows = bilm.config.char_table_rows
    with pytest.raises(ValueError, match=rf"\[0, {rows}\)"):
        bilm(np.full((1, 2, 50), rows, "int32"))


def test_stateful_is_refused_with_a_word_branch(bilms):
    config = bilms[("word", "zip")].config
    with pytest.raises(ValueError, match="stateful"):
        keras_elmo.BiLM(config, stateful=True)


def test_keras_file_round_trip_keeps_the_lexicons(bilms, tmp_path):
    bilm = bilms[("word", "zip")]
    path = str(tmp_path / "efml.keras")
    bilm.save(path)
    reloaded = keras.saving.load_model(path, safe_mode=True)
    assert reloaded.config == bilm.config
    sentences, expected, _ = ref.reference("word")
    for a, e in zip(ref.bilm_layers(reloaded, sentences), expected):
        ref.assert_relative(a, e)


def test_token_cache_is_refused_for_a_lexicon_model(bilms):
    with pytest.raises(ValueError, match="UTF-8 byte characters"):
        keras_elmo.ElmoLayer(bilms[("char", "zip")], vocabulary=["中国"])


def test_float64_model_keeps_the_stored_values_exactly():
    """`dtype="float64"`: every weight is the stored float32 tensor in
    float64 after its layout change, the LSTM biases' `b - 1.0` (the
    forget bias taken out) computed in float64, so `b` comes back
    exactly; the float32 model holds the same values rounded once."""
    from keras_elmo.weights import elmoformanylangs as efml
    from keras_elmo.weights import elmoformanylangs as table

    folder = ref.folder("word", "legacy")
    wide = keras_elmo.BiLM.from_elmoformanylangs(folder, dtype="float64")
    narrow = keras_elmo.BiLM.from_elmoformanylangs(folder)
    stored = efml.read_folder(folder)
    checked = 0
    for port in table.weight_table(wide):
        if port.hook is not table._lstm_bias:
            continue
        b = np.asarray(stored.encoder[port.key], np.float64)
        value = np.asarray(port.keras_variable.numpy())[port.direction]
        units = value.shape[-1] // 4
        forget = slice(2 * units, 3 * units)
        restored = table._gate_columns(b).copy()
        restored[forget] -= 1.0
        np.testing.assert_array_equal(value, restored)
        checked += 1
    assert checked == 4  # 2 layers x 2 directions
    for x, y in zip(wide.weights, narrow.weights):
        assert x.dtype == "float64" and y.dtype == "float32"
        np.testing.assert_array_equal(
            np.asarray(x.numpy(), np.float32), np.asarray(y.numpy())
        )
