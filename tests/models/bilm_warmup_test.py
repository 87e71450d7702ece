"""keras_elmo against simple_elmo 0.9.2's own vectors (committed fixture).

The fixture (tests/fixtures/simple_elmo/README.md) holds simple_elmo's
`get_elmo_vectors` and `get_elmo_vector_average` on the seeded `tiny`
weights, 10 sentences, `max_batch_size=4` (batches of 4, 4 and 2).
"""

import numpy as np
import pytest

import keras_elmo
from keras_elmo.compat import simple_elmo
from keras_elmo.models.bilm import elmo_layers
from tests.models import simple_elmo_fixture as fixture

TOLERANCE = 1e-5  # relative: max |diff| / max |simple_elmo|, real tokens


@pytest.fixture(scope="module")
def stateless(reference_weights):
    return keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))


@pytest.fixture(scope="module")
def stateful(stateless):
    return simple_elmo.stateful_copy(stateless)


def _sentences():
    return fixture.sentences()["vector_sentences"]


def _batches(sentences):
    size = fixture.BATCH_SIZE
    return [sentences[i : i + size] for i in range(0, len(sentences), size)]


def _stateless_layers(bilm, sentences):
    """`[L + 1, n, 2P]` per sentence, each sentence on its own."""
    out = []
    for s in sentences:
        layers = elmo_layers(bilm(keras_elmo.batch_to_ids([s])))
        out.append(np.stack([np.asarray(x)[0] for x in layers]))
    return out


def test_fixture_batch_size_is_the_one_recorded():
    assert int(fixture.vectors()["batch_size"]) == fixture.BATCH_SIZE
    lengths = [len(s) for s in _sentences()]
    assert fixture.vectors()["lengths"].tolist() == lengths


@pytest.mark.parametrize("layers", ["all", "top", "average"])
def test_stateful_after_the_same_warmup_equals_simple_elmo(stateful, layers):
    sentences = _sentences()
    ours = simple_elmo.embed_with_warmup(
        stateful, sentences, batch_size=fixture.BATCH_SIZE, warmup=True
    )
    reference = fixture.vectors()[f"vectors_{layers}"]
    for row, (vectors, sentence) in enumerate(zip(ours, sentences)):
        n = len(sentence)
        if layers == "all":
            mine, theirs = vectors, reference[row, :, :n]
        elif layers == "top":
            mine, theirs = vectors[-1], reference[row, :n]
        else:  # weight_layers' zero weights: softmax(0 + 1/3), gamma 1
            mine, theirs = vectors.mean(axis=0), reference[row, :n]
        assert fixture.relative_error(mine, theirs) <= TOLERANCE, row


def test_no_warmup_equals_simple_elmo_warmup_false(stateful):
    sentences = _sentences()
    ours = simple_elmo.embed_with_warmup(
        stateful, sentences, batch_size=fixture.BATCH_SIZE, warmup=None
    )
    reference = fixture.vectors()["vectors_all_no_warmup"]
    for row, (vectors, sentence) in enumerate(zip(ours, sentences)):
        theirs = reference[row, :, : len(sentence)]
        assert fixture.relative_error(vectors, theirs) <= TOLERANCE, row


def test_an_explicit_warmup_batch_is_the_first_batch_when_given_it(stateful):
    sentences = _sentences()
    first = simple_elmo.embed_with_warmup(
        stateful, sentences, batch_size=4, warmup="first_batch"
    )
    given = simple_elmo.embed_with_warmup(
        stateful, sentences, batch_size=4, warmup=sentences[:4]
    )
    for a, b in zip(first, given):
        np.testing.assert_array_equal(a, b)


def test_stateless_differs_because_simple_elmo_carries_states(stateless):
    """Stateless equals simple_elmo where simple_elmo starts from zero
    states (its first batch without warm-up) and nowhere else: the
    difference is the carried LSTM state, not the maths."""
    sentences = _sentences()
    ours = _stateless_layers(stateless, sentences)
    vectors = fixture.vectors()
    no_warmup = vectors["vectors_all_no_warmup"]
    warm = vectors["vectors_all"]
    for row, sentence in enumerate(sentences):
        n = len(sentence)
        from_zero = fixture.relative_error(ours[row], no_warmup[row, :, :n])
        carried = fixture.relative_error(ours[row], warm[row, :, :n])
        # layer 0 (the char-CNN) has no state: always equal
        token_layer = fixture.relative_error(ours[row][0], warm[row, 0, :n])
        assert token_layer <= TOLERANCE
        if row < fixture.BATCH_SIZE:
            assert from_zero <= TOLERANCE, row
        else:
            assert from_zero > 0.1, (row, from_zero)
        assert carried > 0.1, (row, carried)


def test_padding_positions(stateful):
    """simple_elmo pads its output to the longest sentence of all; inside
    a batch its layer-0 padding holds [x; x] of an all-zero character
    row (the padding token's char-CNN vector), its biLSTM layers 0.
    keras_elmo's padding is 0 in every layer."""
    sentences = _sentences()
    reference = fixture.vectors()["vectors_all"]
    empty = np.asarray(
        stateful.embed_tokens(np.zeros((1, 1, 50), np.int32))
    ).reshape(-1)
    pad_layer0 = np.concatenate([empty, empty])
    assert np.abs(pad_layer0).max() > 0.1
    for start, batch in zip(range(0, 10, 4), _batches(sentences)):
        longest = max(len(s) for s in batch)
        for offset, sentence in enumerate(batch):
            row = reference[start + offset]
            n = len(sentence)
            inside = row[0, n:longest]
            np.testing.assert_allclose(
                inside, np.broadcast_to(pad_layer0, inside.shape), atol=1e-6
            )
            np.testing.assert_array_equal(row[1:, n:], 0.0)
            np.testing.assert_array_equal(row[:, longest:], 0.0)
    out = stateful(keras_elmo.batch_to_ids(sentences[:4]))
    stateful.reset_states()
    mask = np.asarray(out["mask"])
    for layer in elmo_layers(out):
        np.testing.assert_array_equal(np.asarray(layer)[~mask], 0.0)


def _l2(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_sentence_vectors(stateful):
    """`get_elmo_vector_average` divides the sum over the batch's padded
    length (padding included) by that length and L2-normalises. For
    `top` the padding is 0, so it is the L2-normalised masked mean; for
    `average` it includes layer-0 padding vectors / 3, equal to the
    masked mean only for the longest sentence of each batch."""
    sentences = _sentences()
    ours = simple_elmo.embed_with_warmup(
        stateful, sentences, batch_size=4, warmup=True
    )
    reference = fixture.vectors()
    empty = np.asarray(
        stateful.embed_tokens(np.zeros((1, 1, 50), np.int32))
    ).reshape(-1)
    pad_average = np.concatenate([empty, empty]) / 3.0
    for start, batch in zip(range(0, 10, 4), _batches(sentences)):
        longest = max(len(s) for s in batch)
        for offset, sentence in enumerate(batch):
            row, n = start + offset, len(sentence)
            top = _l2(ours[row][-1].mean(axis=0))
            assert (
                fixture.relative_error(top, reference["sentence_top"][row])
                <= TOLERANCE
            )
            average = ours[row].mean(axis=0)  # [n, 2P], simple_elmo's mix
            with_padding = _l2(
                (average.sum(axis=0) + (longest - n) * pad_average) / longest
            )
            theirs = reference["sentence_average"][row]
            assert fixture.relative_error(with_padding, theirs) <= TOLERANCE
            masked_mean = _l2(average.mean(axis=0))
            if n == longest:
                assert fixture.relative_error(masked_mean, theirs) <= TOLERANCE
            else:
                assert fixture.relative_error(masked_mean, theirs) > 1e-3


def test_stateful_copy_keeps_the_weights_and_the_original(stateless):
    copy = simple_elmo.stateful_copy(stateless)
    assert copy.stateful and not stateless.stateful
    for a, b in zip(copy.get_weights(), stateless.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert simple_elmo.stateful_copy(copy) is copy


@pytest.mark.parametrize(
    "warmup", ["first", 1, [], [["a"], "b"], [[1, 2]], {"a": 1}]
)
def test_bad_warmup_names_the_argument(stateful, warmup):
    with pytest.raises(ValueError, match="`warmup`"):
        simple_elmo.embed_with_warmup(stateful, [["a"]], warmup=warmup)


def test_a_stateless_bilm_is_refused(stateless):
    with pytest.raises(ValueError, match="stateful=True"):
        simple_elmo.run_batches(stateless, [[["a"]]])
    with pytest.raises(TypeError, match="`bilm`"):
        simple_elmo.stateful_copy("elmo")
    with pytest.raises(ValueError, match="`batch_size`"):
        simple_elmo.embed_with_warmup(stateless, [["a"]], batch_size=0)
