"""Opt-in warm-up: the vectors of simple_elmo / bilm-tf, reproduced exactly.

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
(`keras_elmo.models.bilm_tf_replay`) for every model that has bilm-tf's
architecture: on the same machine its vectors then equal simple_elmo's
bit for bit (measured: `benchmarks/simple_elmo_side_by_side.py` on the
`original` weights; `tests/models/bilm_warmup_test.py` checks 1e-5
against a committed fixture made on another CPU). Other biLMs (a
Unicode lexicon) run through the stateful `BiLM` itself
(`keras_elmo.models.bilm_state`), equal to float rounding; a long
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
"""

import weakref

import numpy as np

from keras_elmo.models import bilm_tf_replay
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm_outputs import elmo_layers
from keras_elmo.models.bilm_outputs import output_dict
from keras_elmo.text.batch_to_ids import batch_to_ids

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
    if not bilm_tf_replay.supports(bilm.config):
        return None
    rows = max(len(b) for b in batches + ([warmup] if warmup else []))
    replay = _replays.get(bilm)
    if replay is None or replay.max_batch_size != rows:
        replay = bilm_tf_replay.BilmTfReplay(bilm, max_batch_size=rows)
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
