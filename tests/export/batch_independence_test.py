"""Stateless serving: a sentence's vectors do not depend on its batch or on
concurrent calls.

The concurrency check runs 8 threads x 200 calls (the acceptance figure);
set `KERAS_ELMO_CONCURRENT_CALLS` to change the calls per thread.
"""

import concurrent.futures
import os

import numpy as np
import pytest
import tensorflow as tf

LAYERS = ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo")
THREADS = 8
CALLS = int(os.environ.get("KERAS_ELMO_CONCURRENT_CALLS", "200"))


def mixed_sentences(count, seed=0, max_len=20):
    rng = np.random.default_rng(seed)
    words = ["the", "cat", "sat", "on", "a", "mat", ".", "ELMo", "vectors"]
    words += ["naïve", "déjà", "x" * 60, "2018", ",", "!"]
    return [
        " ".join(rng.choice(words, size=int(rng.integers(1, max_len + 1))))
        for _ in range(count)
    ]


def relative_error(a, b):
    scale = max(float(np.abs(b).max()), 1e-12)
    return float(np.abs(a - b).max()) / scale


@pytest.mark.large
def test_each_sentence_alone_equals_it_inside_a_batch_of_64(loaded):
    sentences = mixed_sentences(64)
    batch = loaded.signatures["default"](text=tf.constant(sentences))
    lengths = batch["sequence_len"].numpy()
    worst = 0.0
    for row, sentence in enumerate(sentences):
        alone = loaded.signatures["default"](text=tf.constant([sentence]))
        n = lengths[row]
        assert alone["sequence_len"].numpy()[0] == n
        for key in LAYERS:
            got = batch[key].numpy()[row, :n]
            assert not batch[key].numpy()[row, n:].any()  # zero padding
            worst = max(worst, relative_error(got, alone[key].numpy()[0]))
        worst = max(
            worst,
            relative_error(
                batch["default"].numpy()[row], alone["default"].numpy()[0]
            ),
        )
    assert worst <= 1e-6, worst


@pytest.mark.large
def test_concurrent_calls_equal_sequential_calls(loaded, record_property):
    inputs = [mixed_sentences(4, seed=s, max_len=8) for s in range(THREADS)]
    signature = loaded.signatures["default"]
    expected = [
        signature(text=tf.constant(batch))["elmo"].numpy() for batch in inputs
    ]

    def worker(thread):
        results = []
        for call in range(CALLS):
            k = (thread + call) % len(inputs)
            out = signature(text=tf.constant(inputs[k]))["elmo"].numpy()
            results.append((k, out))
        return results

    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        runs = list(pool.map(worker, range(THREADS)))
    identical, worst = True, 0.0
    for results in runs:
        assert len(results) == CALLS
        for k, out in results:
            identical &= np.array_equal(out, expected[k])
            worst = max(worst, relative_error(out, expected[k]))
    record_property("concurrent_calls", THREADS * CALLS)
    record_property("bit_identical", identical)
    print(
        f"{THREADS} threads x {CALLS} calls: bit-identical={identical}, "
        f"max relative error {worst:.3g}"
    )
    assert worst <= 1e-6, worst
