"""`BilmTfReplay`: bilm-tf's inference graph, op for op, on a BiLM's weights.

float32 results depend on the order of the operations, and a biLSTM can
amplify a one-ulp difference: on the `original` architecture with seeded
random weights, one 64-token sentence's backward states drifted to 1e-5
relative of simple_elmo's after ~60 steps (neither order is "more
right": both are float32 roundings of the same function). Users who must
reproduce old bilm-tf / simple_elmo vectors exactly need the same
operations, so this module runs bilm-tf's graph (`bilm/model.py`, as
simple_elmo 0.9.2 builds it through `tf.compat.v1`) with TensorFlow ops
in the same order and on the same shapes, reading the `BiLM`'s own
variables. On the same machine and TensorFlow build the vectors then
equal simple_elmo's bit for bit (measured: benchmarks/
simple_elmo_side_by_side.py).

Per batch of char ids `[B, T, C]` (sentence boundaries included):

    x   = embedding_lookup([0; E], ids)                       # [B, T, C, d]
    y_w = act(max_pool(conv2d(x, K_w, VALID) + b_w))          # per width w
    e   = reshape(concat_w y_w, [B T, F])
    e   = g t + (1 - g) e,  g = sig(e Wc + bc), t = relu(e Wt + bt)  # highway
    e   = reshape(e Wp + bp, [B, T, P])
    for each direction (backward: reverse_sequence over the lengths) and
    layer k, dynamic_rnn of TF1's LSTMCell, time-major, every row:
        i, j, f, o = split(bias_add(concat([x_t, h]) [W; U], b))    # [B, 4H]
        c' = clip(sig(f + forget_bias) c + sig(i) tanh(j), cell_clip)
        h' = clip((sig(o) tanh(c')) W_proj, proj_clip)
        y_t = h' (+ x_t for k > 0 with skip connections: ResidualWrapper)
        rows past their length keep (h, c) and output zeros

States are held as bilm-tf holds them: `S` rows (its `max_batch_size`),
zero at the start; a batch of `B <= S` rows starts from rows `0..B-1`
and writes its final states there, rows `B..S-1` keep theirs.

TensorFlow only; char-CNN biLMs with bilm-tf's byte lexicon, no word
branch and a projected LSTM (`projection_dim < lstm_units`, TF1's
`num_proj`), which covers every bilm-tf, AllenNLP, NLPL and simple_elmo
model; `supports` says which.
"""

import numpy as np
import tensorflow as tf

from keras_elmo.utils.backend import is_tensorflow


def supports(config):
    """True when `BilmTfReplay` can run a biLM with this `BiLMConfig`."""
    return (
        is_tensorflow()
        and config.char_lexicon is None
        and not config.has_word_branch
        and config.projection_dim < config.lstm_units
    )


def _clip(x, limit):
    return x if limit is None else tf.clip_by_value(x, -limit, limit)


class BilmTfReplay:
    """bilm-tf's stateful inference on a `keras_elmo.BiLM`'s variables.

    Args:
        bilm: a `keras_elmo.BiLM` whose config `supports` accepts.
        max_batch_size: int, the rows of the carried states (`S`).

    Calling it on char ids with boundaries `[B, T, C]` (`B <= S`) returns
    `(token_embeddings [B, T, P], [layer_k [B, T, 2P] for each layer])`,
    boundaries still in, and carries the states to the next call.
    """

    def __init__(self, bilm, max_batch_size):
        config = bilm.config
        if not supports(config):
            raise ValueError(
                "BilmTfReplay runs char-CNN biLMs with bilm-tf's byte "
                "lexicon, no word branch and projection_dim < lstm_units, "
                f"on TensorFlow; received a biLM with config {config!r:.300}."
            )
        # The sublayers whose variables the replay reads, not the biLM
        # itself: a cache of replays keyed by biLM (bilm_warmup) must not
        # keep its key alive.
        self._char_cnn = bilm.char_cnn
        self._highway = bilm.highway
        self._token_projection = bilm.token_projection
        self._bilstm = bilm.bilstm
        self.max_batch_size = int(max_batch_size)
        lstm = bilm.bilstm
        self._clips = (lstm.cell_clip, lstm.projection_clip)
        self._forget_bias = lstm.forget_bias
        self._sizes = (lstm.projection_dim, lstm.units)
        self._num_layers = lstm.num_layers
        self._skip = lstm.use_skip_connections
        slots = config.max_characters_per_token
        # Traced here, once, into concrete functions: every batch shape
        # runs the same graph, and calling a concrete function never
        # retraces (nor trips tf.function's frequent-retracing warning
        # when several replays are built in one process).
        self._embed = tf.function(
            self._token_embeddings,
            input_signature=[tf.TensorSpec([None, None, slots], tf.int32)],
        ).get_concrete_function()
        spec = [
            tf.TensorSpec([None, None, lstm.projection_dim], tf.float32),
            tf.TensorSpec([None], tf.int32),
            tf.TensorSpec([None, lstm.units], tf.float32),
            tf.TensorSpec([None, lstm.projection_dim], tf.float32),
        ]
        self._layers = {
            (k, d): tf.function(
                self._make_layer(k, d), input_signature=spec
            ).get_concrete_function()
            for k in range(self._num_layers)
            for d in (0, 1)
        }
        self.reset()

    def reset(self):
        """Zero states, as a new bilm-tf session starts."""
        rows = (self._num_layers, 2, self.max_batch_size)
        self.h = np.zeros(rows + (self._sizes[0],), np.float32)
        self.c = np.zeros(rows + (self._sizes[1],), np.float32)

    def _token_embeddings(self, ids):
        """bilm-tf's char-CNN, highway and projection: `[B, T, P]`."""
        char_cnn = self._char_cnn
        table = tf.concat(
            [
                tf.zeros((1, char_cnn.char_embedding_dim), tf.float32),
                tf.convert_to_tensor(char_cnn.char_embeddings),
            ],
            axis=0,
        )
        x = tf.nn.embedding_lookup(table, ids)  # [B, T, C, d]
        slots = ids.shape[-1]
        features = []
        for kernel, bias in zip(char_cnn.kernels, char_cnn.biases):
            width = kernel.shape[0]
            conv = tf.nn.conv2d(
                x, kernel[None], strides=[1, 1, 1, 1], padding="VALID"
            )
            conv = tf.nn.max_pool2d(
                conv + bias, [1, 1, slots - width + 1, 1], [1, 1, 1, 1], "VALID"
            )
            act = tf.nn.relu if char_cnn.activation == "relu" else tf.tanh
            features.append(tf.squeeze(act(conv), axis=[2]))
        e = tf.concat(features, 2)
        batch_and_steps = tf.shape(e)[:2]
        e = tf.reshape(e, [-1, e.shape[-1]])
        for block in self._highway.blocks:
            carry = tf.nn.sigmoid(
                tf.matmul(e, block["carry_kernel"]) + block["carry_bias"]
            )
            transform = tf.nn.relu(
                tf.matmul(e, block["transform_kernel"])
                + block["transform_bias"]
            )
            e = carry * transform + (1.0 - carry) * e
        projection = self._token_projection
        e = tf.matmul(e, projection.kernel) + projection.bias
        return tf.reshape(e, tf.concat([batch_and_steps, [e.shape[-1]]], 0))

    def _make_layer(self, index, direction):
        """One layer and direction's dynamic_rnn, as a function of
        `(inputs [B, T, P], lengths [B], c [B, H], h [B, P])`."""
        cell_clip, projection_clip = self._clips
        forget_bias = self._forget_bias
        residual = index > 0 and self._skip
        lstm = self._bilstm

        def layer(inputs, lengths, c, h):
            """`(outputs [B, T, P], c, h)`; TF1's kernel is `[W; U]`."""
            kernel = tf.concat(
                [
                    lstm.kernels[index][direction],
                    lstm.recurrent_kernels[index][direction],
                ],
                axis=0,
            )
            bias = lstm.biases[index][direction]
            projection = lstm.projection_kernels[index][direction]
            steps = tf.transpose(inputs, [1, 0, 2])
            outputs = tf.TensorArray(tf.float32, size=tf.shape(steps)[0])
            for t in tf.range(tf.shape(steps)[0]):
                x = steps[t]
                z = tf.nn.bias_add(
                    tf.matmul(tf.concat([x, h], 1), kernel), bias
                )
                i, j, f, o = tf.split(z, 4, axis=1)
                c_new = _clip(
                    tf.nn.sigmoid(f + forget_bias) * c
                    + tf.nn.sigmoid(i) * tf.tanh(j),
                    cell_clip,
                )
                h_new = _clip(
                    tf.matmul(tf.nn.sigmoid(o) * tf.tanh(c_new), projection),
                    projection_clip,
                )
                y = h_new + x if residual else h_new
                running = (t < lengths)[:, None]
                outputs = outputs.write(
                    t, tf.where(running, y, tf.zeros_like(y))
                )
                c = tf.where(running, c_new, c)
                h = tf.where(running, h_new, h)
            return tf.transpose(outputs.stack(), [1, 0, 2]), c, h

        return layer

    def __call__(self, char_ids):
        ids = tf.cast(char_ids, tf.int32)
        batch = int(ids.shape[0])
        if batch > self.max_batch_size:
            raise ValueError(
                "Received an invalid value for argument `char_ids`, expected "
                f"at most max_batch_size={self.max_batch_size} rows, got "
                f"{batch}."
            )
        lengths = tf.reduce_sum(
            tf.cast(tf.reduce_any(ids > 0, axis=2), tf.int32), axis=1
        )
        embeddings = self._embed(ids)
        halves = []
        for direction in (0, 1):
            sequence = embeddings
            if direction:
                sequence = tf.reverse_sequence(sequence, lengths, 1, 0)
            per_layer = []
            for k in range(self._num_layers):
                sequence, c, h = self._layers[(k, direction)](
                    sequence,
                    lengths,
                    tf.constant(self.c[k, direction, :batch]),
                    tf.constant(self.h[k, direction, :batch]),
                )
                self.c[k, direction, :batch] = c.numpy()
                self.h[k, direction, :batch] = h.numpy()
                per_layer.append(
                    tf.reverse_sequence(sequence, lengths, 1, 0)
                    if direction
                    else sequence
                )
            halves.append(per_layer)
        layers = [
            tf.concat([forward, backward], axis=2).numpy()
            for forward, backward in zip(*halves)
        ]
        return embeddings.numpy(), layers
