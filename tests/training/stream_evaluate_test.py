"""`stream_perplexity`: states carried across lines, checked against one
long line with the boundary tokens written out."""

import math

import keras
import numpy as np
import pytest

import keras_elmo
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.models.language_model import BiLMLanguageModel
from keras_elmo.training.evaluate import evaluate_model
from keras_elmo.training.stream_evaluate import stream_perplexity

WORDS = "the cat sat on a mat and dog ran far".split()
LINES = [
    "the cat sat on the mat",
    "a dog ran",
    "the dog sat far and the cat ran",
    "zebra on a mat",  # "zebra" is out of the vocabulary
    "cat",
]


@pytest.fixture(scope="module")
def model_and_vocabulary():
    keras.utils.set_random_seed(3)
    vocabulary = Vocabulary(["<S>", "</S>", "<UNK>"] + WORDS)
    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
    model = BiLMLanguageModel(bilm, len(vocabulary), dropout=0.0)
    # Larger random weights, so that carried states change the numbers.
    model.set_weights(
        [2.0 * w if w.ndim > 1 else w for w in model.get_weights()]
    )
    return model, vocabulary


def write(tmp_path, lines, name="data.txt"):
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def per_position_losses(model, vocabulary, tokens):
    """Cross-entropy of each prediction of one stateless line, in NumPy."""
    hidden = model(keras_elmo.batch_to_ids([tokens]), training=False)
    weights = np.asarray(model.softmax.embeddings, np.float64)
    bias = np.asarray(model.softmax.bias, np.float64)
    ids = [vocabulary.token_to_id(t) for t in tokens]
    targets = {
        "forward": ids + [vocabulary.eos_id],
        "backward": [vocabulary.bos_id] + ids,
    }
    out = {}
    for direction in ("forward", "backward"):
        logits = np.asarray(hidden[direction][0], np.float64) @ weights.T
        logits += bias
        log_z = np.log(np.exp(logits).sum(-1))
        picked = logits[np.arange(len(ids) + 1), targets[direction]]
        out[direction] = log_z - picked
    return out


def test_one_line_per_part_equals_evaluate_model(
    model_and_vocabulary, tmp_path
):
    model, vocabulary = model_and_vocabulary
    data = write(tmp_path, LINES)
    stream = stream_perplexity(model, vocabulary, data, rows=len(LINES))
    alone = evaluate_model(model, vocabulary, data, batch_size=8)
    assert stream["tokens"] == alone["tokens"] == 22 + 5
    assert stream["oov_rate"] == alone["oov_rate"] == 1 / 22
    for key in ("forward_perplexity", "backward_perplexity", "perplexity"):
        np.testing.assert_allclose(stream[key], alone[key], rtol=1e-5)


@pytest.mark.large
def test_carried_states_equal_one_long_line(model_and_vocabulary, tmp_path):
    model, vocabulary = model_and_vocabulary
    first, second = LINES[0].split(), LINES[2].split()
    data = write(tmp_path, [" ".join(first), " ".join(second)])
    stream = stream_perplexity(model, vocabulary, data, rows=1)
    # One line `<S> first </S> <S> second </S>`: its LSTMs read exactly
    # what the carried states saw. Its extra predictions (index
    # len(first) + 1 in each direction) are the forward one of the inner
    # `<S>` (from the inner `</S>`) and the backward one of the inner
    # `</S>` (from the inner `<S>`).
    joined = per_position_losses(
        model, vocabulary, first + ["</S>", "<S>"] + second
    )
    forward = np.delete(joined["forward"], len(first) + 1)
    backward = np.delete(joined["backward"], len(first) + 1)
    n = len(first) + len(second) + 2
    assert stream["tokens"] == n == len(forward) == len(backward)
    np.testing.assert_allclose(
        math.log(stream["forward_perplexity"]), forward.mean(), rtol=1e-5
    )
    np.testing.assert_allclose(
        math.log(stream["backward_perplexity"]), backward.mean(), rtol=1e-5
    )
    # And the carried context matters: lines alone score differently.
    alone = evaluate_model(model, vocabulary, data, batch_size=8)
    assert (
        abs(alone["forward_perplexity"] - stream["forward_perplexity"]) > 1e-3
    )
    assert (
        abs(alone["backward_perplexity"] - stream["backward_perplexity"]) > 1e-3
    )


def test_rows_must_be_positive(model_and_vocabulary, tmp_path):
    model, vocabulary = model_and_vocabulary
    with pytest.raises(ValueError, match="rows") as error:
        stream_perplexity(model, vocabulary, write(tmp_path, LINES), rows=0)
    assert "got 0" in str(error.value)
