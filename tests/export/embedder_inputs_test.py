"""`Embedder.embed` refuses what is not a batch of sentences, naming the
argument, the index of the bad sentence (and token), what was expected
and what was received: never a raw TypeError from inside, never a dict's
keys embedded as if they were the caller's sentences."""

import numpy as np
import pytest

import keras_elmo
from tests.conftest import tiny_bilm


@pytest.fixture(scope="module")
def embedder():
    return keras_elmo.Embedder(tiny_bilm(0))


@pytest.mark.parametrize(
    "sentences, kind, where, got",
    [
        ([None], TypeError, "sentences[0]", "got NoneType"),
        ([5], TypeError, "sentences[0]", "got int"),
        ([["ok"], None], TypeError, "sentences[1]", "got NoneType"),
        ([["ok"], b"a b"], TypeError, "sentences[1]", "got bytes b'a b'"),
        ([["ok"], {"a": 1}], TypeError, "sentences[1]", "got dict {'a': 1}"),
        (
            [["ok", 3.5]],
            TypeError,
            "sentences[0][1]",
            "got a float in sentence 0, token 1: float",
        ),
        (
            [["ok"], ["a", None]],
            TypeError,
            "sentences[1][1]",
            "got a NoneType in sentence 1, token 1: NoneType",
        ),
    ],
)
def test_a_bad_sentence_is_named_by_index(
    embedder, sentences, kind, where, got
):
    with pytest.raises(kind) as error:
        embedder.embed(sentences)
    message = str(error.value)
    assert message.startswith(
        "Received an invalid value for argument `sentences`: "
        f"{where}: expected "
    ), message
    assert message.endswith(f", {got}."), message
    assert "not iterable" not in message
    assert error.value.argument == "sentences"
    assert error.value.index == tuple(
        int(i) for i in where[len("sentences[") : -1].split("][")
    )


@pytest.mark.parametrize(
    "sentences, got",
    [
        ({"a b": 1}, "dict {'a b': 1}"),
        ({("a", "b")}, "set {('a', 'b')}"),
        (frozenset({"a"}), "frozenset frozenset({'a'})"),
        ("a b", "str 'a b'"),
        (None, "NoneType"),
    ],
)
def test_a_dict_or_set_is_not_a_batch(embedder, sentences, got):
    with pytest.raises(TypeError) as error:
        embedder.embed(sentences)
    assert str(error.value) == (
        "Received an invalid value for argument `sentences`, expected a "
        "list of sentences (each a list of str tokens, or a str), got "
        f"{got}."
    )
    assert error.value.argument == "sentences"


def test_a_lone_surrogate_is_refused_naming_sentence_and_token(embedder):
    with pytest.raises(ValueError) as error:
        embedder.embed([["fine"], ["ok", "ab\ud800c"]])
    assert str(error.value).startswith(
        "Received an invalid value for argument `sentences`: "
        "sentences[1][1] ('ab\\ud800c') holds the lone surrogate U+D800 "
        "at character 2, which is not text"
    ), str(error.value)
    assert error.value.index == (1, 1)
    with pytest.raises(ValueError, match=r"sentences\[0\]\[0\]"):
        embedder.sentence_vectors(["\udfff x"])


def test_escaped_bytes_are_embedded_as_those_bytes(embedder):
    """U+DC80..U+DCFF stand for the bytes 0x80..0xFF (surrogateescape),
    as embed_file gives a line that is not UTF-8."""
    escaped = embedder.embed([["a\udce9"]])[0]
    raw = embedder.embed([[b"a\xe9"]])[0]
    np.testing.assert_array_equal(escaped, raw)
    assert escaped.shape == (3, 1, 32)


def test_batch_to_ids_refuses_a_dict_or_set():
    with pytest.raises(TypeError, match="received dict"):
        keras_elmo.batch_to_ids({("a", "b"): 1})
    with pytest.raises(TypeError, match="received set"):
        keras_elmo.batch_to_ids([{"a", "b"}])
