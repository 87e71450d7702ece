"""Negatives drawn without replacement (bilm-tf's sampler), stateless.

Checked against a NumPy re-derivation on the same stateless stream, against
TensorFlow's own `log_uniform_candidate_sampler(unique=True)` expected
counts, and by frequency over many seeds.
"""

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.training.fused_loss import log_uniform_sample
from keras_elmo.training.fused_loss import pool_size
from keras_elmo.training.fused_loss import sampled_candidates
from keras_elmo.training.fused_loss import unique_log_uniform_candidates


def _p(k, vocabulary_size):
    k = np.asarray(k, np.float64)
    return (np.log(k + 2) - np.log(k + 1)) / np.log(vocabulary_size + 1)


def test_candidates_are_the_first_distinct_draws_with_their_expected_counts():
    V, S = 300, 40
    seed = tf.constant([7, 11], tf.int64)
    labels = np.array([0, 3, 120, 299], np.int64)
    sampled, q_true, q_sampled = unique_log_uniform_candidates(
        tf.constant(labels), S, V, seed
    )
    # NumPy: the same stateless stream, walked one draw at a time.
    stream = log_uniform_sample(64 * V, V, seed)[0].numpy()
    seen, draws = [], 0
    for word in stream:
        draws += 1
        if word not in seen:
            seen.append(int(word))
        if len(seen) == S:
            break
    assert sampled.numpy().tolist() == seen
    np.testing.assert_allclose(
        q_sampled.numpy(), 1 - (1 - _p(seen, V)) ** draws, rtol=1e-6
    )
    np.testing.assert_allclose(
        q_true.numpy(), 1 - (1 - _p(labels, V)) ** draws, rtol=1e-6
    )


def test_expected_counts_follow_tensorflows_formula_for_its_own_sampler():
    V, S = 1000, 100
    labels = tf.constant([[0], [17], [999]], tf.int64)
    tf_draw = tf.random.log_uniform_candidate_sampler(
        labels, 1, S, True, V, seed=5
    )
    words = tf_draw.sampled_candidates.numpy()
    q = tf_draw.sampled_expected_count.numpy().astype(np.float64)
    # TensorFlow reports Q(k) = 1 - (1 - P(k))^n for its number of draws
    # n: recover n from its rarest candidate, then check every count.
    rare = np.argmin(q)
    n = np.log1p(-q[rare]) / np.log1p(-_p(words[rare], V))
    np.testing.assert_allclose(
        q, -np.expm1(n * np.log1p(-_p(words, V))), rtol=1e-4
    )
    assert len(set(words.tolist())) == S


def test_inclusion_frequencies_match_the_expected_counts():
    V, S, runs = 60, 12, 400
    counts = np.zeros(V)
    mean_q = np.zeros(V)
    for run in range(runs):
        sampled, _, q = unique_log_uniform_candidates(
            tf.constant([0], tf.int64), S, V, tf.constant([run, 3], tf.int64)
        )
        counts[sampled.numpy()] += 1
        everyone = unique_log_uniform_candidates(
            tf.range(V, dtype=tf.int64), S, V, tf.constant([run, 3], tf.int64)
        )[1].numpy()
        mean_q += everyone / runs
        assert len(set(sampled.numpy().tolist())) == S
        np.testing.assert_allclose(q.numpy(), everyone[sampled.numpy()])
    frequency = counts / runs
    # Binomial standard error, 5 sigma.
    bound = 5 * np.sqrt(mean_q * (1 - mean_q) / runs) + 1e-9
    assert np.all(np.abs(frequency - mean_q) <= bound)
    assert abs(counts.sum() / runs - S) < 1e-9


def test_a_short_pool_is_grown_and_gives_the_same_candidates(monkeypatch):
    import keras_elmo.training.fused_loss as lm_loss

    V, S = 400, 150
    seed = tf.constant([1, 2], tf.int64)
    labels = tf.constant([0, 5], tf.int64)
    wide = unique_log_uniform_candidates(labels, S, V, seed)
    # A first pool of S draws holds fewer than S distinct words (Zipf
    # repeats), so the loop must double it, perhaps more than once.
    stream = log_uniform_sample(S, V, seed)[0].numpy()
    assert len(set(stream.tolist())) < S
    monkeypatch.setattr(lm_loss, "pool_size", lambda s, v: s)
    short = unique_log_uniform_candidates(labels, S, V, seed)
    for a, b in zip(wide, short):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_pool_size_expects_a_margin_of_distinct_words():
    V, S = 46738, 8192
    n = pool_size(S, V)
    p = _p(np.arange(V), V)
    distinct = np.sum(-np.expm1(n * np.log1p(-p)))
    assert S + 6 * np.sqrt(S) <= distinct <= S + 6 * np.sqrt(S) + 0.02 * S


def test_same_seed_same_candidates_in_and_out_of_tf_function():
    args = (tf.constant([4, 9], tf.int64), 64, 5000, tf.constant([3, 4]))
    eager = sampled_candidates(*args, unique=True)
    traced = tf.function(sampled_candidates)(*args, unique=True)
    for a, b in zip(eager, traced):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_num_sampled_must_be_below_the_vocabulary():
    with pytest.raises(ValueError, match="`num_sampled` below the vocabulary"):
        unique_log_uniform_candidates(
            tf.constant([0], tf.int64), 50, 50, tf.constant([1, 2])
        )
