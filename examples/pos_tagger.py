"""A BiLSTM POS tagger, with or without ELMo at its input, and its training.

Baseline (per token `k`): `x_k = [word_emb(w_k); char_cnn(w_k)]`, where
`word_emb` is a task-trained embedding of the lower-cased word (train
vocabulary, `<UNK>` for rare words) and `char_cnn` a width-3 convolution
over the token's characters, max-pooled over them. Then
`h = BiLSTM(dropout(x))` and `p(tag_k) = softmax(W dropout(h_k) + b)`.

ELMo tagger (Peters et al. 2018, section 3.3): the same with
`[x_k; ELMo_k]` at the input, `ELMo_k = dropout(gamma * sum_j
softmax(s)_j h_{k,j})` over the frozen biLM's `L + 1` layers, fed in
precomputed (`bilm_cache.py`): `keras_elmo.layers.ScalarMix` is the
first layer of that branch, so only `s` and `gamma` are trained, exactly
as in `ElmoLayer(bilm, trainable_bilm=False)`.
"""

import keras
import numpy as np
import tensorflow as tf

import keras_elmo


def build_tagger(
    num_words,
    num_chars,
    num_tags,
    max_word_chars,
    word_dim=64,
    char_dim=16,
    char_filters=32,
    hidden=64,
    dropout=0.3,
    elmo_layers=0,
    elmo_dim=0,
    elmo_dropout=0.3,
):
    """The functional tagger; `elmo_layers > 0` adds the ELMo input.

    Inputs: `words` int32 `[B, T]` (0 = padding), `chars` int32
    `[B, T, max_word_chars]` and, with ELMo, `bilm_layers` float32
    `[B, elmo_layers, T, elmo_dim]`. Output: tag logits `[B, T, num_tags]`.
    """
    words = keras.Input((None,), dtype="int32", name="words")
    chars = keras.Input((None, max_word_chars), dtype="int32", name="chars")
    inputs = {"words": words, "chars": chars}
    word_vectors = keras.layers.Embedding(
        num_words, word_dim, mask_zero=True, name="word_embedding"
    )(words)
    char_vectors = keras.layers.Embedding(
        num_chars, char_dim, name="char_embedding"
    )(chars)
    # A (1, 3) Conv2D over [B, T, C, char_dim] is a width-3 Conv1D over
    # each token's characters; then max over the C characters.
    char_vectors = keras.layers.Conv2D(
        char_filters, (1, 3), padding="same", activation="relu", name="char_cnn"
    )(char_vectors)
    char_vectors = keras.layers.MaxPooling2D(
        (1, max_word_chars), name="char_max"
    )(char_vectors)
    char_vectors = keras.layers.Reshape(
        (-1, char_filters), name="char_features"
    )(char_vectors)
    pieces = [word_vectors, char_vectors]
    if elmo_layers:
        layers = keras.Input(
            (elmo_layers, None, elmo_dim), dtype="float32", name="bilm_layers"
        )
        inputs["bilm_layers"] = layers
        elmo = keras_elmo.layers.ScalarMix(elmo_layers, name="scalar_mix")(
            layers
        )
        pieces.append(keras.layers.Dropout(elmo_dropout)(elmo))
    x = keras.layers.Concatenate(name="token_features")(pieces)
    x = keras.layers.Dropout(dropout)(x)
    x = keras.layers.Bidirectional(
        keras.layers.LSTM(hidden, return_sequences=True), name="bilstm"
    )(x)
    x = keras.layers.Dropout(dropout)(x)
    logits = keras.layers.Dense(num_tags, name="tag_logits")(x)
    return keras.Model(inputs, logits)


def make_batch(examples, layers=None):
    """Pads `(word_ids, char_ids, tag_ids)` examples into one batch.

    `layers`: optional list of float16 `[n_i, L + 1, 2P]` activations.
    Returns `(inputs dict, tags [B, T], weights [B, T])`.
    """
    steps = max(len(e[0]) for e in examples)
    size = len(examples)
    chars = examples[0][1].shape[1]
    words = np.zeros((size, steps), np.int32)
    char_ids = np.zeros((size, steps, chars), np.int32)
    tags = np.zeros((size, steps), np.int32)
    weights = np.zeros((size, steps), np.float32)
    for row, (w, c, t) in enumerate(examples):
        words[row, : len(w)] = w
        char_ids[row, : len(w)] = c
        tags[row, : len(w)] = t
        weights[row, : len(w)] = 1.0
    inputs = {"words": words, "chars": char_ids}
    if layers is not None:
        num_layers, dim = layers[0].shape[1:]
        stacked = np.zeros((size, num_layers, steps, dim), np.float32)
        for row, activations in enumerate(layers):
            stacked[row, :, : len(activations)] = np.transpose(
                activations, (1, 0, 2)
            )
        inputs["bilm_layers"] = stacked
    return inputs, tags, weights


def batches(num_examples, lengths, batch_size, rng=None):
    """Index batches of similar lengths; shuffled when `rng` is given."""
    order = np.arange(num_examples)
    if rng is not None:
        order = rng.permutation(num_examples)
        # Sort within chunks of 50 batches: little padding, still random.
        chunk = 50 * batch_size
        order = np.concatenate(
            [
                sorted(order[i : i + chunk], key=lambda j: lengths[j])
                for i in range(0, num_examples, chunk)
            ]
        )
    else:
        order = np.argsort(lengths, kind="stable")
    result = [
        order[i : i + batch_size] for i in range(0, num_examples, batch_size)
    ]
    if rng is not None:
        result = [result[i] for i in rng.permutation(len(result))]
    return result


class TaggerTrainer:
    """Adam training with compiled steps and early stopping on dev.

    Args:
        model: a `build_tagger` model.
        learning_rate: float. Adam step size (gradients clipped to
            global norm 5).
        batch_size: int, sentences per batch.
    """

    def __init__(self, model, learning_rate=2e-3, batch_size=32):
        self.model = model
        self.batch_size = batch_size
        self.optimizer = keras.optimizers.Adam(learning_rate, clipnorm=5.0)
        self.optimizer.build(model.trainable_variables)
        specs = {
            "words": tf.TensorSpec([None, None], tf.int32),
            "chars": tf.TensorSpec(
                [None, None, model.input["chars"].shape[-1]], tf.int32
            ),
        }
        if "bilm_layers" in model.input:
            shape = model.input["bilm_layers"].shape
            specs["bilm_layers"] = tf.TensorSpec(
                [None, shape[1], None, shape[3]], tf.float32
            )
        matrix = tf.TensorSpec([None, None], tf.int32)
        weights = tf.TensorSpec([None, None], tf.float32)
        self._train_step = tf.function(
            self._train_step_fn, input_signature=[specs, matrix, weights]
        )
        self._predict = tf.function(self._predict_fn, input_signature=[specs])

    def _train_step_fn(self, inputs, tags, weights):
        with tf.GradientTape() as tape:
            logits = self.model(inputs, training=True)
            losses = keras.losses.sparse_categorical_crossentropy(
                tags, logits, from_logits=True
            )
            loss = tf.reduce_sum(losses * weights) / tf.reduce_sum(weights)
        variables = self.model.trainable_variables
        self.optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    def _predict_fn(self, inputs):
        return tf.argmax(self.model(inputs, training=False), axis=-1)

    def accuracy(self, examples, layers=None):
        """Token accuracy over `examples` (padding excluded)."""
        lengths = [len(e[0]) for e in examples]
        correct = total = 0
        for index in batches(len(examples), lengths, 128):
            inputs, tags, weights = make_batch(
                [examples[i] for i in index],
                None if layers is None else [layers[i] for i in index],
            )
            predicted = self._predict(inputs).numpy()
            correct += float(np.sum((predicted == tags) * weights))
            total += float(np.sum(weights))
        return correct / total

    def fit(
        self,
        train,
        dev,
        train_layers=None,
        dev_layers=None,
        steps=1000,
        evaluations=8,
        seed=0,
        log=None,
    ):
        """Trains `steps` batches, checks dev accuracy `evaluations` times
        and restores the best weights. Returns the best dev accuracy."""
        rng = np.random.default_rng(seed)
        lengths = [len(e[0]) for e in train]
        eval_every = max(1, steps // max(1, evaluations))
        best, best_weights, step = -1.0, None, 0
        while step < steps:
            for index in batches(len(train), lengths, self.batch_size, rng):
                inputs, tags, weights = make_batch(
                    [train[i] for i in index],
                    None
                    if train_layers is None
                    else [train_layers[i] for i in index],
                )
                loss = float(self._train_step(inputs, tags, weights))
                step += 1
                if step % eval_every == 0 or step == steps:
                    dev_accuracy = self.accuracy(dev, dev_layers)
                    if log:
                        log(
                            f"step {step}/{steps} loss {loss:.4f} "
                            f"dev {dev_accuracy:.4f}"
                        )
                    if dev_accuracy > best:
                        best = dev_accuracy
                        best_weights = self.model.get_weights()
                if step >= steps:
                    break
        self.model.set_weights(best_weights)
        return best
