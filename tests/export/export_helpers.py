"""Helpers of the export tests: a seeded tiny BiLM and its Keras outputs."""

import numpy as np
import tensorflow as tf

import keras_elmo

SEED = 1234

# Sentences of mixed lengths (1..13 tokens), with punctuation and unicode.
SENTENCES = [
    "The cat sat on the mat .",
    "Hello",
    "ELMo gives each token a vector that depends on its sentence .",
    "naïve café , déjà vu",
    "a b",
    "One more sentence with a few more words than the others here .",
]


def keras_outputs(bilm, sentences):
    """`{key: [B, T, D]}` from the Keras BiLM, with the plain-average mix."""
    tokens = [s.split() for s in sentences]
    out = bilm(keras_elmo.batch_to_ids(tokens))
    result = {k: np.asarray(v) for k, v in out.items() if k != "mask"}
    word = result["word_emb"]
    layers = [np.concatenate([word, word], -1)]
    layers += [result[f"lstm_outputs{k}"] for k in (1, 2)]
    result["elmo"] = sum(layers) / 3.0
    result["sequence_len"] = np.array([len(t) for t in tokens], np.int32)
    return result


def pad_tokens(sentences):
    """`(tokens [B, T] "" padded, sequence_len [B])` tensors."""
    tokens = [s.split() for s in sentences]
    steps = max(len(t) for t in tokens)
    padded = [t + [""] * (steps - len(t)) for t in tokens]
    lengths = np.array([len(t) for t in tokens], np.int32)
    return tf.constant(padded), tf.constant(lengths)
