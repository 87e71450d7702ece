"""BiLM: config, presets, outputs, determinism, serialization."""

import json

import keras
import numpy as np
import pytest

import keras_elmo
from keras_elmo.testing import TestCase
from tests.conftest import tiny_bilm

SEED = 1  # the seed these tests were checked with

SENTENCES = [
    "The cat sat on the mat .".split(),
    ["Hi"],
    "Colorless green ideas sleep furiously".split(),
    "A much longer sentence with many more tokens than the others in this "
    "batch .".split(),
]


def test_outputs_shapes_mask_and_zero_padding():
    bilm = tiny_bilm(SEED)
    ids = keras_elmo.batch_to_ids(SENTENCES)
    out = bilm(ids)
    assert sorted(out) == [
        "lstm_outputs1",
        "lstm_outputs2",
        "mask",
        "word_emb",
    ]
    assert out["word_emb"].shape == (4, 15, 16)
    assert out["lstm_outputs2"].shape == (4, 15, 32)
    lengths = np.array([len(s) for s in SENTENCES])
    mask = np.arange(15)[None] < lengths[:, None]
    np.testing.assert_array_equal(out["mask"], mask)
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        value = np.asarray(out[key])
        assert np.all(value[~mask] == 0.0), key
        assert np.all(np.abs(value[mask]).sum(-1) > 0), key


def test_same_sentence_same_vectors_in_any_batch_position_padding():
    bilm = tiny_bilm(SEED)
    alone = {
        i: bilm(keras_elmo.batch_to_ids([s])) for i, s in enumerate(SENTENCES)
    }
    # Batched, in reverse order, with two extra padding columns.
    order = [3, 0, 2, 1]
    ids = keras_elmo.batch_to_ids([SENTENCES[i] for i in order])
    ids = np.pad(ids, [(0, 0), (0, 2), (0, 0)])
    batched = bilm(ids)
    for row, i in enumerate(order):
        n = len(SENTENCES[i])
        for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
            a = np.asarray(alone[i][key])[0, :n]
            b = np.asarray(batched[key])[row, :n]
            scale = np.abs(a).max()
            assert np.abs(a - b).max() <= 1e-6 * scale, (key, i)


def test_config_options_json_round_trip(tmp_path):
    for name, cfg in keras_elmo.config.PRESETS.items():
        path = tmp_path / f"{name}.json"
        cfg.to_options_json(path)
        assert keras_elmo.BiLMConfig.from_options_json(path) == cfg
        assert (
            keras_elmo.BiLMConfig.from_options_json(json.load(open(path)))
            == cfg
        )


def test_published_configs():
    small = keras_elmo.BiLMConfig.from_architecture("small")
    assert (small.lstm_units, small.projection_dim) == (1024, 128)
    assert small.num_highway_layers == 1 and small.num_filters == 2048
    medium = keras_elmo.BiLMConfig.from_architecture("medium")
    assert (medium.lstm_units, medium.projection_dim) == (2048, 256)
    original = keras_elmo.BiLMConfig.from_architecture("original")
    assert (original.lstm_units, original.projection_dim) == (4096, 512)
    assert original.num_highway_layers == 2


@pytest.mark.parametrize("name", ["tiny", "small"])
def test_parameter_count_matches_the_hdf5_layout(name):
    cfg = keras_elmo.BiLMConfig.from_architecture(name)
    dim, nf = cfg.char_embedding_dim, cfg.num_filters
    hidden, proj = cfg.lstm_units, cfg.projection_dim
    expected = 261 * dim  # char_embed, without the padding row
    expected += sum(w * dim * n + n for w, n in cfg.filters)
    expected += cfg.num_highway_layers * 2 * (nf * nf + nf)
    expected += nf * proj + proj
    expected += 2 * cfg.num_layers * (2 * proj * 4 * hidden + 4 * hidden)
    expected += 2 * cfg.num_layers * hidden * proj
    bilm = keras_elmo.BiLM(cfg)
    assert bilm.count_params() == expected


def test_options_accept_both_n_characters(tmp_path):
    options = keras_elmo.BiLMConfig.from_architecture("tiny").to_options_dict()
    for n in (261, 262):
        options["char_cnn"]["n_characters"] = n
        assert (
            keras_elmo.BiLMConfig.from_options_json(options).n_characters == n
        )
    options["char_cnn"]["n_characters"] = 300
    with pytest.raises(ValueError, match="`char_cnn.n_characters` is 300"):
        keras_elmo.BiLMConfig.from_options_json(options)


def test_bad_options_files_are_named(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json.*not valid JSON"):
        keras_elmo.BiLMConfig.from_options_json(path)
    path.write_text(json.dumps({"lstm": {}}))
    with pytest.raises(ValueError, match="bad.json.*missing or invalid key"):
        keras_elmo.BiLMConfig.from_options_json(path)
    with pytest.raises(ValueError, match="`name`.*got .huge."):
        keras_elmo.BiLMConfig.from_architecture("huge")


def test_keras_file_round_trip_safe_mode(tmp_path):
    bilm = tiny_bilm(SEED)
    ids = keras_elmo.batch_to_ids(SENTENCES)
    path = tmp_path / "bilm.keras"
    bilm.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded, keras_elmo.BiLM)
    assert loaded.config == bilm.config
    for key, value in bilm(ids).items():
        np.testing.assert_array_equal(loaded(ids)[key], value)


def test_stateful_carries_state_and_resets():
    bilm = tiny_bilm(SEED, stateful=True)
    stateless = tiny_bilm(SEED)
    stateless.set_weights(bilm.get_weights())
    ids = keras_elmo.batch_to_ids(SENTENCES[:2])
    first = np.asarray(bilm(ids)["lstm_outputs1"])
    np.testing.assert_allclose(
        first, stateless(ids)["lstm_outputs1"], atol=1e-6
    )
    second = np.asarray(bilm(ids)["lstm_outputs1"])
    assert np.abs(second - first).max() > 1e-3
    bilm.reset_states()
    np.testing.assert_allclose(bilm(ids)["lstm_outputs1"], first, atol=1e-6)


def test_mixed_bfloat16_policy_runs():
    bilm = tiny_bilm(SEED, dtype="mixed_bfloat16")
    out = bilm(keras_elmo.batch_to_ids(SENTENCES))
    assert out["lstm_outputs2"].dtype == "bfloat16"
    assert bilm.bilstm.kernels[0].dtype == "float32"


def test_empty_batches_and_empty_sentences():
    bilm = tiny_bilm(SEED)
    for shape in [(0, 3, 50), (0, 0, 50), (2, 0, 50)]:
        out = bilm(np.zeros(shape, "int32"))
        assert out["lstm_outputs2"].shape == shape[:2] + (32,)
        assert out["word_emb"].shape == shape[:2] + (16,)
    out = bilm(keras_elmo.batch_to_ids([[], ["a"]]))
    assert np.all(np.asarray(out["lstm_outputs1"])[0] == 0.0)


class BiLMBackboneTest(TestCase):
    """The keras-hub backbone harness on `BiLM`: config round trip,
    eager and `predict` calls, other batch sizes and lengths, bfloat16."""

    def setUp(self):
        self.init_kwargs = {
            "config": keras_elmo.BiLMConfig.from_architecture("tiny")
        }
        self.input_data = keras_elmo.batch_to_ids(SENTENCES)

    def test_backbone_basics(self):
        self.run_backbone_test(
            cls=keras_elmo.BiLM,
            init_kwargs=self.init_kwargs,
            input_data=self.input_data,
            expected_output_shape={
                "word_emb": (4, 15, 16),
                "lstm_outputs1": (4, 15, 32),
                "lstm_outputs2": (4, 15, 32),
                "mask": (4, 15),
            },
            variable_length_data=[
                keras_elmo.batch_to_ids([["Hi"]]),
                keras_elmo.batch_to_ids(SENTENCES[:2] * 3),
            ],
        )
