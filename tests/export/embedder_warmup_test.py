"""`Embedder.from_preset(..., warmup=...)`: simple_elmo 0.9.2's vectors.

Against the committed simple_elmo fixture (tests/fixtures/simple_elmo/):
the seeded `tiny` weights, 10 sentences, `max_batch_size=4`.
"""

import shutil

import numpy as np
import pytest

import keras_elmo
from tests.models import simple_elmo_fixture as fixture

TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def model_dir(reference_weights, tmp_path_factory):
    folder = tmp_path_factory.mktemp("warmup_model")
    options, weights = reference_weights("tiny")
    shutil.copy(options, folder / "options.json")
    shutil.copy(weights, folder / "weights.hdf5")
    return str(folder)


@pytest.fixture(scope="module")
def warm(model_dir):
    return keras_elmo.Embedder.from_preset(model_dir, batch_size=4, warmup=True)


def _sentences():
    return fixture.sentences()["vector_sentences"]


@pytest.mark.parametrize("layers", ["all", "top", "average"])
def test_embed_with_warmup_equals_simple_elmo(warm, layers):
    reference = fixture.vectors()[f"vectors_{layers}"]
    got = warm.embed(_sentences(), layers=layers)
    for row, (mine, sentence) in enumerate(zip(got, _sentences())):
        n = len(sentence)
        theirs = (
            reference[row, :, :n] if layers == "all" else reference[row, :n]
        )
        assert mine.shape == theirs.shape
        assert fixture.relative_error(mine, theirs) <= TOLERANCE, row


def test_a_second_call_warms_up_again(warm):
    """Each `embed` resets the states, as each simple_elmo call opens a
    session: the same call gives the same vectors."""
    first = warm.embed(_sentences())
    second = warm.embed(_sentences())
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_sentence_vectors_equal_simple_elmo_for_top(warm):
    got = warm.sentence_vectors(_sentences(), layers="top", normalize=True)
    theirs = fixture.vectors()["sentence_top"]
    assert fixture.relative_error(got, theirs) <= TOLERANCE


def test_warmup_false_is_simple_elmo_without_warmup(model_dir):
    emb = keras_elmo.Embedder.from_preset(model_dir, batch_size=4, warmup=False)
    theirs = fixture.vectors()["vectors_all_no_warmup"]
    for row, (mine, s) in enumerate(zip(emb.embed(_sentences()), _sentences())):
        assert fixture.relative_error(mine, theirs[row, :, : len(s)]) <= (
            TOLERANCE
        )


def test_the_default_stays_stateless(model_dir, warm):
    plain = keras_elmo.Embedder.from_preset(model_dir, batch_size=4)
    sentences = _sentences()
    alone = [plain.embed([s])[0] for s in sentences]
    together = plain.embed(sentences)
    warmed = warm.embed(sentences)
    for a, b, c in zip(alone, together, warmed):
        np.testing.assert_allclose(a, b, atol=1e-5)
        assert np.abs(a[1:] - c[1:]).max() > 0.1  # carried states differ


def test_warmup_errors_name_the_argument(model_dir, warm, tmp_path):
    with pytest.raises(ValueError, match="`warmup`"):
        keras_elmo.Embedder.from_preset(model_dir, warmup="yes")
    with pytest.raises(ValueError, match="`warmup` and `vocabulary`"):
        keras_elmo.Embedder.from_preset(
            model_dir, warmup=True, vocabulary=["the"]
        )
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    with pytest.raises(ValueError, match="`embed_file` is stateless"):
        warm.embed_file(str(text), str(tmp_path / "out.hdf5"))
