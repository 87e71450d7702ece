"""Encoding, frozen-biLM activations and training of the task models.

- `TaskVocabulary`: GloVe rows for the task's words (lower-cased; words
  GloVe lacks share the zero `<UNK>` row) and the training characters.
- `ElmoCache`: the frozen biLM's `L + 1` layers per distinct sentence,
  computed once (`bilm_cache.compute_layers`) and stored as float16 in an
  `.npz` keyed by the weights' digest and the sentences themselves;
  `CoveCache`: the same for a trained CoVe encoder's top layer.
- `TaskTrainer`: Adam on `mean cross-entropy + sum(model.losses)` (the
  ScalarMix L2 of Table 2 is one of the losses), dev accuracy checked
  `evaluations` times, best weights kept, then test accuracy.
"""

import collections
import hashlib
import os

import bilm_cache
import keras
import numpy as np
import tensorflow as tf

from keras_elmo.utils.atomic import atomic_write


class TaskVocabulary:
    """Word ids into a frozen GloVe matrix, and character ids.

    Args:
        glove_words: list of str, GloVe's (lower-cased) words.
        glove_vectors: float32 `[N, dim]`, their vectors.
        train_sentences: token lists whose characters form the char
            vocabulary (rarer than `min_char_count` -> id 1).
        max_word_chars: int, characters kept per token.
    """

    def __init__(
        self,
        glove_words,
        glove_vectors,
        train_sentences,
        max_word_chars=20,
        min_char_count=2,
    ):
        self.max_word_chars = max_word_chars
        self.word_ids = {w: i + 2 for i, w in enumerate(glove_words)}
        dim = glove_vectors.shape[1]
        self.matrix = np.concatenate(
            [np.zeros((2, dim), np.float32), glove_vectors.astype(np.float32)]
        )
        counts = collections.Counter(
            c for s in train_sentences for t in s for c in t[:max_word_chars]
        )
        kept = sorted(c for c, n in counts.items() if n >= min_char_count)
        self.char_ids = {c: i + 2 for i, c in enumerate(kept)}
        self.num_chars = len(kept) + 2

    def encode(self, tokens):
        """`(word ids [n], char ids [n, max_word_chars])`, int32."""
        words = np.array(
            [self.word_ids.get(t.lower(), 1) for t in tokens], np.int32
        )
        chars = np.zeros((len(tokens), self.max_word_chars), np.int32)
        for i, token in enumerate(tokens):
            ids = [self.char_ids.get(c, 1) for c in token[: chars.shape[1]]]
            chars[i, : len(ids)] = ids
        return words, chars

    def coverage(self, sentences):
        """Fraction of tokens with a GloVe vector."""
        tokens = [t.lower() for s in sentences for t in s]
        return sum(t in self.word_ids for t in tokens) / max(1, len(tokens))


def _sentence_key(name, digest, unique):
    key = hashlib.sha256(
        "\n".join(" ".join(s) for s in unique).encode()
    ).hexdigest()[:16]
    return f"{name}-{digest}-{key}-{len(unique)}.npz"


def _cached(path, lengths, compute):
    """`compute()` (float16 `[sum(lengths), ...]`), stored at `path`."""
    if os.path.exists(path):
        with np.load(path, allow_pickle=False) as stored:
            if np.array_equal(stored["lengths"], lengths):
                return stored["layers"]
    layers = compute()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with atomic_write(path, "wb") as f:
        np.savez(f, layers=layers, lengths=lengths)
    return layers


class ElmoCache:
    """Frozen biLM layers `[n, L + 1, 2P]` (float16) per distinct sentence.

    Args:
        bilm: the frozen `keras_elmo.BiLM`.
        cache_dir: str, where the `.npz` files go.
    """

    def __init__(self, bilm, cache_dir):
        self.bilm = bilm
        self.cache_dir = cache_dir
        self.digest = bilm_cache.weights_digest(bilm)
        self.layers = {}

    def compute(self, sentences):
        return bilm_cache.compute_layers(self.bilm, sentences)

    def add(self, sentences, name):
        """Computes (or loads) the layers of `sentences` (token lists)."""
        unique = sorted({tuple(s) for s in sentences} - set(self.layers))
        if not unique:
            return
        path = os.path.join(
            self.cache_dir, _sentence_key(name, self.digest, unique)
        )
        lengths = np.array([len(s) for s in unique], np.int64)
        layers = _cached(
            path, lengths, lambda: self.compute([list(s) for s in unique])
        )
        ends = np.cumsum(lengths)
        for sentence, n, end in zip(unique, lengths, ends):
            self.layers[sentence] = layers[end - n : end]

    def __getitem__(self, tokens):
        return self.layers[tuple(tokens)]


class CoveCache(ElmoCache):
    """CoVe `[n, 2H]` (float16): the top layer of a trained MT-LSTM
    encoder (`train_cove.py`) over the task words' frozen GloVe vectors.

    Args:
        encoder_path: str, the saved `cove_encoder.keras`.
        vocab: the task's `TaskVocabulary` (its GloVe rows).
        cache_dir: str.
    """

    def __init__(self, encoder_path, vocab, cache_dir):
        import keras

        self.encoder = keras.saving.load_model(encoder_path, safe_mode=True)
        self.vocab = vocab
        self.cache_dir = cache_dir
        with open(encoder_path, "rb") as f:
            self.digest = hashlib.sha256(f.read()).hexdigest()[:16]
        self.layers = {}

    def compute(self, sentences):
        per_sentence = [None] * len(sentences)
        order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
        for start in range(0, len(order), 64):
            batch = order[start : start + 64]
            steps = max(1, max(len(sentences[i]) for i in batch))
            ids = np.zeros((len(batch), steps), np.int32)
            mask = np.zeros((len(batch), steps), bool)
            for row, i in enumerate(batch):
                ids[row, : len(sentences[i])] = self.vocab.encode(sentences[i])[
                    0
                ]
                mask[row, : len(sentences[i])] = True
            top = self.encoder(
                {"vectors": self.vocab.matrix[ids], "mask": mask}
            )[1]
            top = np.asarray(top, np.float16)
            for row, i in enumerate(batch):
                per_sentence[i] = top[row, : len(sentences[i])]
        return np.concatenate(per_sentence, axis=0)


def make_batch(examples, vocab, caches=None, per_token=False):
    """Pads examples `[((tokens, ...), label)]` into model inputs.

    Args:
        examples: list of `((tokens, ...), label)`.
        vocab: the `TaskVocabulary`.
        caches: dict `{"bilm": ElmoCache, "cove": CoveCache}` (either or
            none) of precomputed per-sentence features.
        per_token: bool, labels are per-token tags.

    Returns `(inputs, labels, weights)`: for each sentence slot `i`,
    `words_i` `[B, T]`, `chars_i` `[B, T, C]`, and `bilm_i`
    `[B, L + 1, T, 2P]` / `cove_i` `[B, T, 2H]` float32; labels `[B]`,
    or `[B, T]` tags with 0/1 `weights` `[B, T]` when `per_token`.
    """
    inputs = {}
    for slot in range(len(examples[0][0])):
        sentences = [e[0][slot] for e in examples]
        steps = max(1, max(len(s) for s in sentences))
        words = np.zeros((len(examples), steps), np.int32)
        chars = np.zeros((len(examples), steps, vocab.max_word_chars), np.int32)
        for row, tokens in enumerate(sentences):
            words[row, : len(tokens)], chars[row, : len(tokens)] = vocab.encode(
                tokens
            )
        inputs[f"words_{slot}"], inputs[f"chars_{slot}"] = words, chars
        for name, cache in (caches or {}).items():
            first = cache[sentences[0]]  # [n, D] or [n, K, D]
            shape = (len(examples),) + first.shape[1:-1] + (steps,)
            stacked = np.zeros(shape + first.shape[-1:], np.float32)
            for row, tokens in enumerate(sentences):
                features = cache[tokens]
                if features.ndim == 3:  # [n, K, D] -> [K, n, D]
                    features = np.transpose(features, (1, 0, 2))
                    stacked[row, :, : len(tokens)] = features
                else:
                    stacked[row, : len(tokens)] = features
            inputs[f"{name}_{slot}"] = stacked
    if not per_token:
        labels = np.array([e[1] for e in examples], np.int32)
        return inputs, labels, np.ones(len(examples), np.float32)
    labels = np.zeros(inputs["words_0"].shape, np.int32)
    weights = np.zeros(inputs["words_0"].shape, np.float32)
    for row, (_, tags) in enumerate(examples):
        labels[row, : len(tags)] = tags
        weights[row, : len(tags)] = 1.0
    return inputs, labels, weights


def length_batches(examples, batch_size, rng=None):
    """Index batches of similar total length; shuffled when `rng` given."""
    lengths = np.array([sum(len(s) for s in e[0]) for e in examples])
    order = np.argsort(lengths, kind="stable")
    if rng is not None:
        order = rng.permutation(len(examples))
        chunk = 50 * batch_size
        order = np.concatenate(
            [
                sorted(order[i : i + chunk], key=lambda j: lengths[j])
                for i in range(0, len(order), chunk)
            ]
        )
    result = [
        order[i : i + batch_size] for i in range(0, len(order), batch_size)
    ]
    if rng is not None:
        result = [result[i] for i in rng.permutation(len(result))]
    return result


class TaskTrainer:
    """Adam with compiled steps, dev checks and best-weights restore.

    Args:
        model: a `task_models.build_task_model` model.
        vocab: its `TaskVocabulary`.
        caches: dict of `ElmoCache` / `CoveCache` (see `make_batch`).
        per_token: bool, tag every token (POS) instead of one label.
        learning_rate: float (gradients clipped to global norm 5).
        batch_size: int.
    """

    def __init__(
        self,
        model,
        vocab,
        caches=None,
        per_token=False,
        learning_rate=2e-3,
        batch_size=32,
    ):
        self.model, self.vocab = model, vocab
        self.caches = caches
        self.per_token = per_token
        self.batch_size = batch_size
        self.optimizer = keras.optimizers.Adam(learning_rate, clipnorm=5.0)
        self.optimizer.build(model.trainable_variables)
        specs = {
            name: tf.TensorSpec(
                [None] + list(tensor.shape[1:]), tensor.dtype, name=name
            )
            for name, tensor in model.input.items()
        }
        for name, spec in specs.items():
            shape = spec.shape.as_list()
            if name.startswith("bilm_"):  # [B, L + 1, T, 2P]: T varies
                specs[name] = tf.TensorSpec(
                    [None, shape[1], None, shape[3]], tf.float32
                )
        label_shape = [None, None] if per_token else [None]
        labels = tf.TensorSpec(label_shape, tf.int32)
        weights = tf.TensorSpec(label_shape, tf.float32)
        self._train_step = tf.function(
            self._train_step_fn,
            input_signature=[specs, labels, weights],
            reduce_retracing=True,
        )
        self._predict = tf.function(
            self._predict_fn, input_signature=[specs], reduce_retracing=True
        )

    def _train_step_fn(self, inputs, labels, weights):
        with tf.GradientTape() as tape:
            logits = self.model(inputs, training=True)
            losses = keras.losses.sparse_categorical_crossentropy(
                labels, logits, from_logits=True
            )
            loss = tf.reduce_sum(losses * weights) / tf.reduce_sum(weights)
            if self.model.losses:  # the ScalarMix L2 (Table 2)
                loss += tf.add_n(self.model.losses)
        variables = self.model.trainable_variables
        self.optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    def _predict_fn(self, inputs):
        return tf.argmax(self.model(inputs, training=False), axis=-1)

    def _batch(self, examples, index):
        return make_batch(
            [examples[i] for i in index],
            self.vocab,
            self.caches,
            self.per_token,
        )

    def accuracy(self, examples):
        """Accuracy over examples (tokens for POS, padding excluded)."""
        correct = total = 0.0
        for index in length_batches(examples, 128):
            inputs, labels, weights = self._batch(examples, index)
            predicted = self._predict(inputs).numpy()
            correct += float(np.sum((predicted == labels) * weights))
            total += float(np.sum(weights))
        return correct / total

    def fit(self, train, dev, steps, evaluations=8, seed=0, log=None):
        """Trains `steps` batches; returns the best dev accuracy (whose
        weights the model then holds)."""
        rng = np.random.default_rng(seed)
        every = max(1, steps // max(1, evaluations))
        best, best_weights, step = -1.0, None, 0
        while step < steps:
            for index in length_batches(train, self.batch_size, rng):
                loss = float(self._train_step(*self._batch(train, index)))
                step += 1
                if step % every == 0 or step == steps:
                    dev_accuracy = self.accuracy(dev)
                    if log:
                        log(
                            f"  step {step}/{steps} loss {loss:.4f} "
                            f"dev {dev_accuracy:.4f}"
                        )
                    if dev_accuracy > best:
                        best, best_weights = (
                            dev_accuracy,
                            self.model.get_weights(),
                        )
                if step >= steps:
                    break
        self.model.set_weights(best_weights)
        return best
