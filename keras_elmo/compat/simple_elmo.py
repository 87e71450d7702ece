"""simple_elmo 0.9.2's vectors, reproduced exactly: a compatibility shim.

What it tracks: simple_elmo 0.9.2 (`ElmoModel.get_elmo_vectors`), which
wraps bilm-tf's inference graph (`bilm/model.py`, through
`tf.compat.v1`): its stateful batching with the warm-up batch, and
bilm-tf's order of TensorFlow operations. keras_elmo's own model (the
stateless `BiLM`) computes the same function in another op order; this
module exists only so that old simple_elmo / bilm-tf vectors can be
reproduced bit for bit, and changes only if those libraries' behaviour
must be matched differently. `Embedder(warmup=...)` is its front door.

## The warm-up (`run_batches`, `embed_with_warmup`)

bilm-tf's inference graph, and simple_elmo 0.9.2 which wraps it, keep the
LSTM states in variables of `max_batch_size` rows: each batch starts from
the final states the previous batch left in the same rows (a row's final
state is taken at its own `</S>`, forward, and `<S>`, backward), and
rows past a batch keep theirs. simple_elmo's `get_elmo_vectors(texts,
warmup=True)` opens a session (states = 0), runs the first batch of
`texts` once and throws the result away ("warm-up"), then runs every
batch of `texts`, the first one again, carrying states throughout. Its
vectors therefore depend on the batch size, the order and what ran
before; keras_elmo's default is stateless (zero states for every
sentence). `run_batches` replays simple_elmo's sequence of calls with
the same rule, through bilm-tf's own sequence of TensorFlow ops
(`BilmTfReplay`, below) for every model that has bilm-tf's
architecture: on the same machine its vectors then equal simple_elmo's
bit for bit (measured: `benchmarks/simple_elmo_side_by_side.py` on the
`original` weights; `tests/models/bilm_warmup_test.py` checks 1e-5
against a committed fixture made on another CPU). Other biLMs (a
Unicode lexicon) run through the stateful `BiLM` itself
(`keras_elmo.models.bilm`), equal to float rounding; a long
sentence can amplify that rounding to about 1e-5 relative.

`warmup` (the argument of every function here):

- `None` or `False`: no warm-up; states start at zero and still carry
  from batch to batch (simple_elmo's `warmup=False`);
- `True` or `"first_batch"`: simple_elmo's default: the first batch of
  the sentences being embedded, once;
- a list of token lists: that batch, once (the batch an old run warmed up
  on, when it was not the first of these sentences).

Padding: simple_elmo's arrays are padded to the longest sentence of all
`texts`; inside a batch, its layer-0 padding positions hold the token
vector of an empty character row (non-zero), its biLSTM layers 0.
keras_elmo's positions past a sentence's length are 0 in every layer.
Real tokens agree.

## bilm-tf's op order (`BilmTfReplay`)

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

import weakref

import numpy as np
import tensorflow as tf

from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm import elmo_layers
from keras_elmo.models.bilm import output_dict
from keras_elmo.text.char_vocab import batch_to_ids
from keras_elmo.utils import is_tensorflow


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
        # itself: a cache of replays keyed by biLM (`_replays`) must not
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


FIRST_BATCH = "first_batch"

# The replay of each stateful biLM, kept while the biLM lives: it reads
# the biLM's variables (never copies), so a later run on the same biLM
# with the same rows reuses its traced functions instead of tracing them
# again for every call.
_replays = weakref.WeakKeyDictionary()


def check_warmup(warmup):
    """`None`, `FIRST_BATCH`, or a list of token lists; else `ValueError`."""
    if warmup is None or warmup is False:
        return None
    if warmup is True or warmup == FIRST_BATCH:
        return FIRST_BATCH
    if isinstance(warmup, (list, tuple)) and warmup:
        if all(
            isinstance(s, (list, tuple)) and all(isinstance(t, str) for t in s)
            for s in warmup
        ):
            return [list(s) for s in warmup]
    raise ValueError(
        "Received an invalid value for argument `warmup`, expected None, "
        f"False, True, {FIRST_BATCH!r} or a non-empty list of token lists "
        f"(the warm-up batch), got {warmup!r:.200}."
    )


def stateful_copy(bilm):
    """A `stateful=True` `BiLM` with `bilm`'s config, dtype and weights.

    `bilm` itself is left as it is (a stateless biLM stays stateless);
    a stateful one is returned unchanged, with its carried states reset.
    """
    if not isinstance(bilm, BiLM):
        raise TypeError(
            "Received an invalid value for argument `bilm`, expected a "
            f"keras_elmo.BiLM, got {type(bilm).__name__}."
        )
    if bilm.stateful:
        bilm.reset_states()
        return bilm
    copy = BiLM(bilm.config, stateful=True, dtype=bilm.dtype_policy)
    copy.set_weights(bilm.get_weights())
    return copy


def run_batches(bilm, batches, warmup=FIRST_BATCH):
    """Outputs of a stateful `bilm` on `batches`, in simple_elmo's order.

    Resets the carried states, runs the warm-up batch once (see the
    module docstring), then every batch in order, carrying states.

    Args:
        bilm: a `keras_elmo.BiLM` with `stateful=True`.
        batches: list of batches, each a list of token lists.
        warmup: see the module docstring.

    Returns:
        One dict per batch of NumPy arrays, as `bilm(char_ids)` returns:
        `word_emb` `[B, T, P]`, `lstm_outputs1..L` `[B, T, 2P]`, `mask`.
    """
    if not isinstance(bilm, BiLM) or not bilm.stateful:
        raise ValueError(
            "Received an invalid value for argument `bilm`, expected a "
            "keras_elmo.BiLM with stateful=True (see `stateful_copy`), got "
            f"{_describe(bilm)}."
        )
    warmup = check_warmup(warmup)
    batches = [list(batch) for batch in batches]
    if any(not batch for batch in batches):
        raise ValueError(
            "Received an invalid value for argument `batches`: every batch "
            "must hold at least one sentence."
        )
    bilm.reset_states()
    if warmup == FIRST_BATCH:
        warmup = batches[0] if batches else None
    run = _replay_runner(bilm, batches, warmup) or _stateful_runner(bilm)
    if warmup is not None:
        run(warmup)
    return [run(batch) for batch in batches]


def _stateful_runner(bilm):
    """A batch -> its output dict, through the stateful BiLM itself."""

    def run(batch):
        out = bilm(batch_to_ids(batch), training=False)
        return {k: np.asarray(v) for k, v in out.items()}

    return run


def _replay_runner(bilm, batches, warmup):
    """As `_stateful_runner`, through `BilmTfReplay` (bilm-tf's own ops,
    hence its exact float32 values), or None where it does not apply.
    Its final states are handed to the BiLM's carried states after each
    batch, so the BiLM carries on from them as before."""
    if not supports(bilm.config):
        return None
    rows = max(len(b) for b in batches + ([warmup] if warmup else []))
    replay = _replays.get(bilm)
    if replay is None or replay.max_batch_size != rows:
        replay = BilmTfReplay(bilm, max_batch_size=rows)
        _replays[bilm] = replay
    replay.reset()
    add_boundaries = bilm.get_layer("add_sentence_boundaries")

    def run(batch):
        char_ids = batch_to_ids(batch)
        mask = np.any(char_ids > 0, axis=-1)
        embeddings, layers = replay(add_boundaries(char_ids))
        out = output_dict(bilm.remove_boundaries, embeddings, layers, mask)
        bilm.carry_states(replay.h, replay.c)
        return {k: np.asarray(v) for k, v in out.items()}

    return run


def embed_with_warmup(bilm, sentences, batch_size=32, warmup=FIRST_BATCH):
    """simple_elmo's `get_elmo_vectors(sentences, layers="all")`, exactly.

    Args:
        bilm: a `keras_elmo.BiLM` with `stateful=True` (`stateful_copy`).
        sentences: list of token lists, in the order simple_elmo got them.
        batch_size: int. simple_elmo's `max_batch_size` (its default 32).
        warmup: see the module docstring (simple_elmo's default: True).

    Returns:
        A list with one float32 array `[L + 1, n_i, 2P]` per sentence
        (layer 0 = `[x; x]`); simple_elmo's `layers="top"` is `[-1]` of
        each, `layers="average"` the mean over axis 0.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(
            "Received an invalid value for argument `batch_size`, expected "
            f"a positive integer, got {batch_size!r}."
        )
    sentences = [list(s) for s in sentences]
    batches = [
        sentences[i : i + batch_size]
        for i in range(0, len(sentences), batch_size)
    ]
    vectors = []
    for batch, out in zip(batches, run_batches(bilm, batches, warmup)):
        stacked = np.stack([np.asarray(x) for x in elmo_layers(out)], axis=1)
        for row, sentence in enumerate(batch):
            vectors.append(
                np.ascontiguousarray(
                    stacked[row, :, : len(sentence)], np.float32
                )
            )
    return vectors


def _describe(bilm):
    if isinstance(bilm, BiLM):
        return "a BiLM with stateful=False"
    return type(bilm).__name__
