"""`export_saved_model(..., vocabulary=...)`: a SavedModel with the token
cache gives the uncached outputs, in a process without keras_elmo."""

# The cache runs the char-CNN on unique tokens in batches of their own, so
# float rounding differs from the uncached run by CPU (1.3e-6 seen on an
# AVX2-only EPYC, under 1e-6 on AVX-512): a relative bound on AVX2-only
# CPUs (tests/cpu_rounding.py).

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.export.saved_model import export_saved_model
from tests.cpu_rounding import on_cpu

VOCABULARY = ["<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", ".", "a"]
SENTENCES = [
    "The cat sat on the mat .",
    "a",
    "naïve café , déjà vu on the cat",
    "",
]
# Only tensorflow: the hash table and the cache must come back by themselves.
CLEAN = r"""
import sys
import numpy as np
import tensorflow as tf
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["default"](text=tf.constant(sys.argv[3:]))
np.savez(sys.argv[2], **{k: v.numpy() for k, v in out.items()})
assert "keras_elmo" not in sys.modules
"""


@pytest.fixture(scope="module")
def exports(reference_weights, tmp_path_factory):
    bilm = keras_elmo.BiLM.from_allennlp(*reference_weights("tiny"))
    root = tmp_path_factory.mktemp("cache_export")
    plain = export_saved_model(bilm, str(root / "plain"))
    cached = export_saved_model(
        bilm, str(root / "cached"), vocabulary=VOCABULARY
    )
    return plain, cached


@pytest.mark.large
def test_cached_saved_model_equals_uncached(exports):
    plain, cached = (tf.saved_model.load(p) for p in exports)
    text = tf.constant(SENTENCES)
    want = plain.signatures["default"](text=text)
    got = cached.signatures["default"](text=text)
    assert sorted(got) == sorted(want)
    assert np.abs(want["lstm_outputs2"].numpy()).max() > 1.0
    for key in want:
        np.testing.assert_allclose(
            got[key], want[key], atol=1e-6, rtol=on_cpu(0, 1e-5)
        )
    tokens = tf.constant([["the", "zebra", ""], ["", "cat", "a"]])
    lengths = tf.constant([2, 3], tf.int32)
    want = plain.signatures["tokens"](tokens=tokens, sequence_len=lengths)
    got = cached.signatures["tokens"](tokens=tokens, sequence_len=lengths)
    for key in want:
        np.testing.assert_allclose(
            got[key], want[key], atol=1e-6, rtol=on_cpu(0, 1e-5)
        )
    # The cache is a saved, non-trainable variable: [3 + V, P].
    shapes = [tuple(v.shape) for v in cached.non_trainable_variables]
    assert (3 + len(VOCABULARY), 16) in shapes
    assert len(cached.trainable_variables) == 2  # the mix: s and gamma


@pytest.mark.large
def test_cached_saved_model_loads_with_tensorflow_only(exports, tmp_path):
    out = tmp_path / "out.npz"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PYTHONPATH", None)
    subprocess.run(
        [sys.executable, "-c", CLEAN, exports[1], str(out), *SENTENCES],
        check=True,
        env=env,
        cwd=str(tmp_path),
    )
    got = np.load(out)
    want = tf.saved_model.load(exports[0]).signatures["default"](
        text=tf.constant(SENTENCES)
    )
    for key in want:
        np.testing.assert_allclose(
            got[key], want[key], atol=1e-6, rtol=on_cpu(0, 1e-5)
        )
