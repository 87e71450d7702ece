"""The ELMoForManyLangs fixtures: folders written by the real package and
its `sents2elmo` outputs (tests/fixtures/elmoformanylangs/README.md)."""

import json
import os

import numpy as np
import tensorflow as tf

from keras_elmo.models.bilm import elmo_layers

FOLDER = os.path.join(os.path.dirname(__file__), "fixtures", "elmoformanylangs")
MODELS = ("word", "char")  # word_dim 6 and word_dim 0
LAYOUTS = ("zip", "legacy")  # torch's zip layout and the pre-1.6 stream


def folder(model, layout="zip"):
    return os.path.join(FOLDER, f"{model}_{layout}")


def reference(model):
    """`(sentences, [layers [3, n, 16]], [average [n, 16]])`."""
    ref = np.load(
        os.path.join(FOLDER, f"{model}_reference.npz"), allow_pickle=False
    )
    sentences = json.loads(str(ref["sentences_json"]))
    layers = [ref[f"layers_{i}"] for i in range(len(sentences))]
    average = [ref[f"average_{i}"] for i in range(len(sentences))]
    return sentences, layers, average


def padded(sentences):
    steps = max(len(s) for s in sentences)
    return tf.constant([s + [""] * (steps - len(s)) for s in sentences])


def bilm_layers(bilm, sentences):
    """`[L+1, n_i, 2P]` per sentence from `bilm` on string tokens."""
    out = bilm(bilm.encode_tokens(padded(sentences)))
    stacked = np.stack([np.asarray(x) for x in elmo_layers(out)], axis=1)
    return [stacked[i, :, : len(s)] for i, s in enumerate(sentences)]


def assert_relative(actual, expected, tolerance=1e-5):
    """`|a - e| <= tolerance * max|e|` elementwise (relative to scale)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    scale = float(np.abs(expected).max())
    worst = float(np.abs(actual - expected).max())
    assert worst <= tolerance * scale, (worst, scale)
