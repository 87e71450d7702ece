"""`LMSubstitutes` against a NumPy re-derivation and simple_elmo 0.9.2.

The model: the seeded `tiny` weights with the committed simple_elmo
fixture's softmax and vocabulary (tests/fixtures/simple_elmo/), as a
model folder and as the committed bilm-tf checkpoint simple_elmo read.
"""

import os
import shutil

import numpy as np
import pytest

import keras_elmo
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.models import LMSubstitutes
from tests.models import simple_elmo_fixture as fixture

SENTENCES = [
    ["the", "cat", "sat", "on", "the", "mat"],
    ["Zürich"],
    ["a", "zebra", "ran", "."],
]


@pytest.fixture(scope="module")
def model_dir(reference_weights, tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    options, weights = reference_weights("tiny")
    shutil.copy(options, folder / "options.json")
    shutil.copy(weights, folder / "weights.hdf5")
    shutil.copy(fixture.path("softmax.hdf5"), folder / "softmax.hdf5")
    shutil.copy(fixture.path("vocab.txt"), folder / "vocab.txt")
    return str(folder)


@pytest.fixture(scope="module")
def lm(model_dir):
    return LMSubstitutes.from_preset(model_dir)


def logsumexp(x, axis, keepdims):
    top = x.max(axis=axis, keepdims=True)
    out = top + np.log(np.exp(x - top).sum(axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis)


def _softmax_arrays():
    import h5py

    with h5py.File(fixture.path("softmax.hdf5"), "r") as f:
        return f["softmax/W"][...], f["softmax/b"][...]


def _top_states(bilm, tokens, boundaries=True):
    """The top biLSTM layer `[T, 2P]` of one token list, optionally run
    with literal `<S>`/`</S>` (batch_to_ids gives them the boundary ids)."""
    if boundaries:
        tokens = ["<S>"] + list(tokens) + ["</S>"]
    ids = keras_elmo.batch_to_ids([tokens])
    x = bilm.embed_tokens(ids)
    layers = bilm.bilstm(x, mask=np.ones(ids.shape[:2], bool))
    return np.asarray(layers[-1])[0]


def _numpy_log_probabilities(bilm, sentence):
    weight, bias = _softmax_arrays()
    top = _top_states(bilm, sentence)
    p = bilm.config.projection_dim
    n = len(sentence)
    forward = top[0:n, :p]  # state at <S>, w_1 .. w_{n-1}
    backward = top[2 : n + 2, p:]  # state at w_2 .. w_n, </S>
    out = {}
    for name, h in (("forward", forward), ("backward", backward)):
        logits = h.astype(np.float64) @ weight.T + bias
        out[name] = logits - logsumexp(logits, axis=-1, keepdims=True)
    return out


def test_log_probabilities_match_numpy(lm):
    bilm = lm.language_model.backbone
    got = lm.log_probabilities(SENTENCES, batch_size=2)
    assert len(got) == len(SENTENCES)
    for sentence, ours in zip(SENTENCES, got):
        expected = _numpy_log_probabilities(bilm, sentence)
        for direction in ("forward", "backward"):
            assert ours[direction].shape == (len(sentence), 37)
            np.testing.assert_allclose(
                ours[direction], expected[direction], atol=2e-5
            )
            np.testing.assert_allclose(
                np.exp(ours[direction]).sum(-1), 1.0, atol=1e-5
            )


def test_substitutes_are_the_numpy_top_k(lm):
    bilm = lm.language_model.backbone
    vocab = lm.vocabulary
    got = lm.substitutes(SENTENCES, top_k=4)
    for sentence, tokens in zip(SENTENCES, got):
        expected = _numpy_log_probabilities(bilm, sentence)
        assert [t["word"] for t in tokens] == sentence
        for i, token in enumerate(tokens):
            for direction in ("forward", "backward"):
                row = expected[direction][i].copy()
                row[[0, 1]] = -np.inf  # <S>, </S> excluded
                best = np.argsort(-row, kind="stable")[:4]
                assert token[direction]["candidates"] == best.tolist()
                assert token[direction]["candidate_words"] == [
                    vocab.id_to_token(int(j)) for j in best
                ]
                np.testing.assert_allclose(
                    token[direction]["logp"], row[best], atol=2e-5
                )
                assert token[direction]["logp"] == sorted(
                    token[direction]["logp"], reverse=True
                )


def test_boundaries_can_be_candidates(lm):
    """`</S>` is a likely next word after a full stop; excluded by default."""
    kept = lm.substitutes([["a", "."]], top_k=37, exclude_boundaries=False)
    dropped = lm.substitutes([["a", "."]], top_k=35)
    for direction in ("forward", "backward"):
        assert {0, 1} <= set(kept[0][1][direction]["candidates"])
        assert not {0, 1} & set(dropped[0][1][direction]["candidates"])


def _simple_elmo_sets(entry):
    return set(entry["candidates"])


def _offsets_agree(theirs, ours):
    """simple_elmo's `logp` are logits: logit - logp is one constant per
    row (the log-normaliser), up to its 4-decimal rounding."""
    ours_by_id = dict(zip(ours["candidates"], ours["logp"]))
    offsets = [
        value - ours_by_id[c]
        for c, value in zip(theirs["candidates"], theirs["logp"])
    ]
    return max(offsets) - min(offsets) <= 2e-4


def test_simple_elmo_substitutes(lm, model_dir):
    """Where simple_elmo's context equals ours (the first word forward,
    from `<S>`; the last word backward, from `</S>`; both from zero
    states) its candidates and logits agree with ours; elsewhere it
    predicts from one word of context (it feeds zero states at every
    step), which our LSTM run on that single word reproduces."""
    checkpoint = LMSubstitutes.from_bilm_tf_checkpoint(
        fixture.path("checkpoint"), fixture.path("vocab.txt")
    )
    sentences = fixture.sentences()["substitute_sentences"]
    reference = fixture.substitutes()
    assert len(reference) == len(sentences)
    ours_dir = lm.substitutes(sentences, top_k=3)
    ours = checkpoint.substitutes(sentences, top_k=3)
    assert ours == ours_dir  # the checkpoint holds the folder's weights
    bilm = checkpoint.language_model.backbone
    weight, bias = _softmax_arrays()
    p = bilm.config.projection_dim
    vocab = checkpoint.vocabulary
    for sentence, theirs, mine in zip(sentences, reference, ours):
        n = len(sentence)
        assert [t["word"] for t in theirs] == [
            w if w in vocab else "<UNK>" for w in sentence
        ]
        first, last = theirs[0]["forward"], theirs[-1]["backward"]
        assert _simple_elmo_sets(first) == set(mine[0]["forward"]["candidates"])
        assert _offsets_agree(first, mine[0]["forward"])
        assert _simple_elmo_sets(last) == set(
            mine[-1]["backward"]["candidates"]
        )
        assert _offsets_agree(last, mine[-1]["backward"])
        for i in range(n):
            for direction, neighbour in (
                ("forward", i - 1),
                ("backward", i + 1),
            ):
                if not 0 <= neighbour < n:
                    continue
                top = _top_states(bilm, [sentence[neighbour]], boundaries=False)
                h = top[0, :p] if direction == "forward" else top[0, p:]
                logits = h @ weight.T + bias
                logits[[0, 1]] = 0.0  # simple_elmo's nodelimiters
                best = set(np.argsort(-logits)[:3].tolist())
                entry = theirs[i][direction]
                assert _simple_elmo_sets(entry) == best, (i, direction)
                np.testing.assert_allclose(
                    entry["logp"], logits[entry["candidates"]], atol=1e-4
                )


def test_weight_only_models_name_what_is_missing(model_dir, tmp_path):
    for name in ("options.json", "weights.hdf5"):
        shutil.copy(os.path.join(model_dir, name), tmp_path / name)
    with pytest.raises(
        FileNotFoundError, match="lacks softmax.hdf5 and vocab.txt"
    ):
        LMSubstitutes.from_preset(str(tmp_path))
    with pytest.raises(ValueError, match="Published presets are weights"):
        LMSubstitutes.from_preset("elmo_2x4096_en")


def test_a_checkpoint_without_softmax_is_refused(tmp_path):
    import tensorflow as tf

    from tests.models.tf_checkpoint_helpers import write_checkpoint

    reader = tf.train.load_checkpoint(
        os.path.join(fixture.path("checkpoint"), "model.ckpt")
    )
    variables = {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if "softmax" not in name
    }
    write_checkpoint(str(tmp_path / "model.ckpt"), variables)
    with pytest.raises(ValueError, match="lm/softmax/W"):
        LMSubstitutes.from_bilm_tf_checkpoint(
            str(tmp_path / "model.ckpt"),
            fixture.path("vocab.txt"),
            options=fixture.path("checkpoint/options.json"),
        )


def test_bad_arguments_are_named(lm):
    with pytest.raises(ValueError, match="`sentences`"):
        lm.substitutes(["the cat"])
    with pytest.raises(ValueError, match="`sentences`"):
        lm.substitutes([[]])
    with pytest.raises(ValueError, match="`top_k`"):
        lm.substitutes([["a"]], top_k=0)
    with pytest.raises(ValueError, match="`batch_size`"):
        lm.log_probabilities([["a"]], batch_size=0)
    with pytest.raises(TypeError, match="`vocabulary`"):
        LMSubstitutes(lm.language_model, ["<S>"])
    with pytest.raises(ValueError, match="37 rows"):
        LMSubstitutes(
            lm.language_model, Vocabulary(["<S>", "</S>", "<UNK>", "a"])
        )
