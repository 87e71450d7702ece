"""ElmoLayer on text as newcomers pass it: ragged tokens, sentences, Python
token lists (`keras_elmo.pad_tokens`), in calls, functional models,
`predict` and saved models; and the errors for what it does not take."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from tests.conftest import padded
from tests.conftest import tiny_bilm
from tests.models.elmo_layer_test import numpy_mix

SEED = 3
SENTENCES = ["a fine film", "dull", "the cat sat on the mat"]
TOKENS = [s.split() for s in SENTENCES]
LENGTHS = np.array([len(t) for t in TOKENS])
MIX = [0.5, -1.0, 2.0]


@pytest.fixture(scope="module")
def bilm():
    return tiny_bilm(SEED)


@pytest.fixture(scope="module")
def layer(bilm):
    return keras_elmo.ElmoLayer(bilm, dropout=0.0, scalar_mix_parameters=MIX)


@pytest.fixture(scope="module")
def expected(bilm):
    """The NumPy mix of the biLM layers on `batch_to_ids`, zero at padding."""
    ids = keras_elmo.batch_to_ids(TOKENS)
    mix = numpy_mix(bilm, ids, np.array(MIX, np.float32))
    return mix * ids.any(-1)[..., None]


def test_ragged_sentences_and_padded_tokens_give_the_same_vectors(
    layer, expected
):
    dense = np.asarray(layer(padded(TOKENS)))
    np.testing.assert_allclose(dense, expected, atol=1e-6)
    forms = {
        "ragged": tf.strings.split(SENTENCES),
        "sentences": tf.constant(SENTENCES),
        "pad_tokens": keras_elmo.pad_tokens(TOKENS),
        "token lists": TOKENS,
        "sentence list": SENTENCES,
        "NumPy sentences": np.array(SENTENCES),
    }
    for form, inputs in forms.items():
        np.testing.assert_array_equal(layer(inputs), dense, err_msg=form)
    # The same layer on char ids (another encoder path, same numbers).
    np.testing.assert_allclose(
        layer(keras_elmo.batch_to_ids(TOKENS)), dense, atol=1e-6
    )


def test_the_mask_covers_real_tokens_only(layer):
    want = np.arange(6)[None, :] < LENGTHS[:, None]
    for inputs in (tf.strings.split(SENTENCES), tf.constant(SENTENCES)):
        np.testing.assert_array_equal(layer.compute_mask(inputs), want)


def test_sentences_split_like_str_split(layer):
    sentences = ["  a\u3000b\xa0\xa0c\u2028", "\td\r\ne ", "", "f"]
    tokens = [s.split() for s in sentences]
    assert tokens[0] == ["a", "b", "c"] and tokens[2] == []
    np.testing.assert_array_equal(
        layer(tf.constant(sentences)), layer(padded(tokens))
    )


def _pooled_model(layer, inputs):
    pooled = keras.layers.GlobalAveragePooling1D()(layer(inputs))
    return keras.Model(inputs, pooled)


@pytest.mark.large
def test_functional_models_mask_padding_in_predict(layer, expected):
    """Mean over real tokens only: each model's mask reached the pooling
    layer, whatever form its input takes."""
    want = expected.sum(1) / LENGTHS[:, None]
    models = {
        "padded": (
            _pooled_model(layer, keras.Input((None,), dtype="string")),
            keras_elmo.pad_tokens(TOKENS),
        ),
        "ragged": (
            _pooled_model(
                layer, keras.Input((None,), dtype="string", ragged=True)
            ),
            tf.strings.split(SENTENCES),
        ),
        "sentences": (
            _pooled_model(layer, keras.Input((), dtype="string")),
            tf.constant(SENTENCES),
        ),
    }
    results = {}
    for form, (model, inputs) in models.items():
        results[form] = model.predict(inputs, batch_size=2, verbose=0)
        np.testing.assert_allclose(results[form], want, atol=1e-6)
    np.testing.assert_array_equal(results["ragged"], results["padded"])
    np.testing.assert_array_equal(results["sentences"], results["padded"])


@pytest.mark.large
def test_sentence_and_ragged_models_save_and_reload(layer, tmp_path):
    for form, inputs, data in [
        ("sentences", keras.Input((), dtype="string"), tf.constant(SENTENCES)),
        (
            "ragged",
            keras.Input((None,), dtype="string", ragged=True),
            tf.strings.split(SENTENCES),
        ),
    ]:
        model = _pooled_model(layer, inputs)
        path = tmp_path / f"{form}.keras"
        model.save(path)
        loaded = keras.saving.load_model(path, safe_mode=True)
        np.testing.assert_array_equal(
            loaded.predict(data, verbose=0), model.predict(data, verbose=0)
        )


def test_pad_tokens_pads_cuts_and_splits():
    tokens = keras_elmo.pad_tokens([["a", "fine", "film"], "dull  one", []])
    assert tokens.dtype == tf.string
    np.testing.assert_array_equal(
        tokens.numpy().astype(str),
        [["a", "fine", "film"], ["dull", "one", ""], ["", "", ""]],
    )
    cut = keras_elmo.pad_tokens([["a", "fine", "film"], ["dull"]], length=2)
    np.testing.assert_array_equal(
        cut.numpy().astype(str), [["a", "fine"], ["dull", ""]]
    )
    assert keras_elmo.pad_tokens([]).shape == (0, 0)
    assert keras_elmo.pad_tokens([["a"]], length=0).shape == (1, 0)


@pytest.mark.parametrize(
    "sentences, error, names",
    [
        ({"a": ["b"]}, TypeError, ["`sentences`", "dict with keys ['a']"]),
        ("a fine film", TypeError, ["`sentences`", "str: 'a fine film'"]),
        ([["a"], 5], TypeError, ["`sentences[1]`", "int: 5"]),
        ([["a", None]], TypeError, ["`sentences[0][1]`", "NoneType: None"]),
    ],
)
def test_pad_tokens_names_what_it_received(sentences, error, names):
    with pytest.raises(error) as info:
        keras_elmo.pad_tokens(sentences)
    for name in names:
        assert name in str(info.value)


def test_pad_tokens_refuses_a_bad_length():
    for length in (-1, 2.0, "3", True):
        with pytest.raises(ValueError, match="`length`.*non-negative int"):
            keras_elmo.pad_tokens([["a"]], length=length)


def test_nested_lists_of_char_ids_are_taken(layer):
    ids = keras_elmo.batch_to_ids(TOKENS)
    np.testing.assert_array_equal(layer(ids.tolist()), layer(ids))


@pytest.mark.parametrize(
    "inputs, error, received",
    [
        ({"tokens": ["a"]}, TypeError, "a dict with keys ['tokens']"),
        (None, TypeError, "NoneType: None"),
        (7, TypeError, "int: 7"),
        (
            tf.constant([[1, 2]]),
            ValueError,
            "EagerTensor of dtype int32 and shape (1, 2)",
        ),
        ([[1, 2]], ValueError, "ndarray of dtype int64 and shape (1, 2)"),
        (
            tf.strings.split([["a b"], ["c"]]),
            ValueError,
            "RaggedTensor of dtype string and shape (2, 1, None)",
        ),
        (
            tf.ragged.constant([[1, 2], [3]]),
            ValueError,
            "RaggedTensor of dtype int32 and shape (2, None)",
        ),
    ],
)
def test_wrong_inputs_name_the_argument_and_what_was_received(
    layer, inputs, error, received
):
    with pytest.raises(error) as info:
        layer(inputs)
    message = str(info.value)
    assert message.startswith("ElmoLayer `inputs` must be")
    assert received in message
    assert "\x1b" not in message
    if error is TypeError or "string" in received:
        assert "keras_elmo.pad_tokens" in message


JAX_CHECK = """
import numpy as np, keras, keras_elmo
from tests.conftest import tiny_bilm
assert keras.config.backend() == "jax"
layer = keras_elmo.ElmoLayer(tiny_bilm(3), dropout=0.0)
sentences = ["a fine film", "dull"]
tokens = [s.split() for s in sentences]
dense = np.asarray(layer(keras_elmo.batch_to_ids(tokens)))
padded = keras_elmo.pad_tokens(sentences)
assert isinstance(padded, np.ndarray) and padded.shape == (2, 3)
for form in (tokens, sentences, np.array(sentences), padded):
    np.testing.assert_array_equal(np.asarray(layer(form)), dense)
print("ok")
"""


@pytest.mark.engine
def test_the_python_forms_on_jax_give_the_char_id_vectors():
    """Off TensorFlow (no string tensors) token lists, sentences and
    `pad_tokens`' NumPy array are encoded in NumPy, to the same vectors."""
    import os
    import subprocess
    import sys

    pytest.importorskip("jax")
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=root)
    done = subprocess.run(
        [sys.executable, "-c", JAX_CHECK],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "ok"
