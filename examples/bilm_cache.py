"""Frozen biLM layer activations, computed once and cached on disk.

A frozen biLM gives the same layers `h_0 = [x; x], h_1, ..., h_L` for a
sentence whatever the task model does, so the POS examples run it once
per sentence and train on the stored activations. Feeding them to a
`keras_elmo.layers.ScalarMix` is then exactly `ElmoLayer(bilm,
trainable_bilm=False)` (the mix and its dropout are the only trained
parts of ELMo in that setting), only much faster.

The cache is one `.npz` per (model weights, data file): `layers`
float16 `[N, L + 1, 2P]` for all `N` tokens of the file, sentence after
sentence, and `lengths` int64 `[S]`. Its name holds a digest of the
biLM's weights and of the data file (name, size, modification time),
so new weights or new data never reuse a stale cache.
"""

import hashlib
import os

import keras
import numpy as np

import keras_elmo
from keras_elmo.embedding.runners import BiLMEmbedder
from keras_elmo.utils.atomic import atomic_write

DEFAULT_CACHE_DIR = os.path.join(
    os.path.expanduser("~"), ".cache", "keras_elmo_examples"
)


def load_bilm(model, seed=0):
    """A shipped pretrained preset (`elmo_small_en`), a folder holding
    `options.json` + `weights.hdf5`, or an architecture preset (`tiny`,
    random weights seeded with `seed`: plumbing only)."""
    from keras_elmo.presets import available_presets

    if model in available_presets():
        return keras_elmo.BiLM.from_preset(model)
    if os.path.isdir(model):
        return keras_elmo.BiLM.from_allennlp(
            os.path.join(model, "options.json"),
            os.path.join(model, "weights.hdf5"),
        )
    keras.utils.set_random_seed(seed)
    return keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture(model))


def weights_digest(bilm):
    """A short hex digest of every weight of `bilm` (order-stable)."""
    digest = hashlib.sha256()
    for weight in bilm.weights:
        digest.update(weight.path.encode())
        digest.update(np.ascontiguousarray(weight.numpy()).tobytes())
    return digest.hexdigest()[:16]


def _file_digest(path, max_sentences):
    stat = os.stat(path)
    key = f"{os.path.abspath(path)}|{stat.st_size}|{stat.st_mtime_ns}"
    key += f"|{max_sentences}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def iter_layers(bilm, sentences, max_batch_tokens=2048):
    """Yields `(i, layers)` for every sentence `i` of `sentences` (lists
    of str): float32 `[L + 1, n_i, 2P]`, in batch order, not input order.

    Sentences are run longest first in batches of about
    `max_batch_tokens` padded tokens; the outputs do not depend on the
    batching (the biLM is stateless).
    """
    embedder = BiLMEmbedder(bilm)
    order = sorted(range(len(sentences)), key=lambda i: -len(sentences[i]))
    start = 0
    while start < len(order):
        width = max(1, len(sentences[order[start]]))
        size = max(1, max_batch_tokens // width)
        batch = order[start : start + size]
        token_lists = [[t.encode("utf-8") for t in sentences[i]] for i in batch]
        yield from zip(batch, embedder(token_lists))
        start += size


def compute_layers(bilm, sentences, max_batch_tokens=2048):
    """`[N, L + 1, 2P]` float16 activations of `sentences` (lists of str),
    for all `N` tokens, sentence after sentence (see `iter_layers`)."""
    per_sentence = [None] * len(sentences)
    for i, layers in iter_layers(bilm, sentences, max_batch_tokens):
        # [L + 1, n, 2P] -> [n, L + 1, 2P]
        per_sentence[i] = np.transpose(layers, (1, 0, 2)).astype(np.float16)
    return np.concatenate(per_sentence, axis=0)


def cached_layers(
    bilm, model_name, data_path, sentences, cache_dir=None, max_sentences=None
):
    """Per-sentence activations `[n_i, L + 1, 2P]` float16, cached.

    Args:
        bilm: the `keras_elmo.BiLM` to run on a cache miss.
        model_name: str, readable part of the cache file name.
        data_path: the file `sentences` were read from (part of the key).
        sentences: list of lists of str, all sentences of `data_path`
            (or its first `max_sentences`).
        cache_dir: str or None (`~/.cache/keras_elmo_examples`).
        max_sentences: int or None, as used to read `sentences`.

    Returns:
        A list of float16 arrays, one `[n_i, L + 1, 2P]` per sentence
        (views into one array).
    """
    cache_dir = cache_dir or DEFAULT_CACHE_DIR
    name = "{}-{}-{}-{}.npz".format(
        os.path.basename(str(model_name).rstrip("/")),
        weights_digest(bilm),
        os.path.basename(data_path).split(".")[0],
        _file_digest(data_path, max_sentences),
    )
    path = os.path.join(cache_dir, name)
    lengths = np.array([len(s) for s in sentences], np.int64)
    if os.path.exists(path):
        with np.load(path, allow_pickle=False) as stored:
            layers, stored_lengths = stored["layers"], stored["lengths"]
        if np.array_equal(stored_lengths, lengths):
            return _split(layers, lengths)
    layers = compute_layers(bilm, sentences)
    os.makedirs(cache_dir, exist_ok=True)
    with atomic_write(path, "wb") as f:
        np.savez(f, layers=layers, lengths=lengths)
    return _split(layers, lengths)


def _split(layers, lengths):
    ends = np.cumsum(lengths)
    return [layers[end - n : end] for n, end in zip(lengths, ends)]
