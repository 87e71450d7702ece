"""WordNet word-sense evaluation, its statistics: the nearest-mean
classifier, the baselines and the bootstrap, on known inputs.
"""

import numpy as np
import pytest

from tests.conftest import load_example

nearest_sense = load_example("nearest_sense")


# --- classifier -----------------------------------------------------------


def test_nearest_mean_matches_a_numpy_rederivation():
    rng = np.random.default_rng(0)
    train_lemma = rng.integers(0, 4, size=60)
    train_sense = train_lemma * 10 + rng.integers(0, 3, size=60)
    train_x = rng.normal(size=(60, 7))
    test_lemma = rng.integers(0, 4, size=25)
    test_x = rng.normal(size=(25, 7))
    got = nearest_sense.nearest_mean(
        train_x, train_lemma, train_sense, test_x, test_lemma
    )
    for i in range(25):
        best, best_cos = None, -np.inf
        for s in sorted(set(train_sense[train_lemma == test_lemma[i]])):
            mean = train_x[train_sense == s].mean(axis=0)
            cos = mean @ test_x[i] / np.linalg.norm(mean)
            cos /= np.linalg.norm(test_x[i])
            if cos > best_cos:
                best, best_cos = s, cos
        assert got[i] == best


def test_nearest_mean_uses_the_mean_not_the_nearest_example():
    # Sense 0: examples (1, 0.3) and (1, -0.3), mean (1, 0).
    # Sense 1: examples (1, 0.06) and (0, 1), mean (0.5, 0.53).
    # The test point (1, 0.05) is nearest to one example of sense 1
    # (cosine 0.99999 vs 0.971), but to the mean of sense 0 (0.999 vs
    # 0.722).
    train_x = np.array([[1, 0.3], [1, -0.3], [1, 0.06], [0, 1]])
    got = nearest_sense.nearest_mean(
        train_x, np.zeros(4, int), np.array([0, 0, 1, 1]), [[1, 0.05]], [0]
    )
    assert got.tolist() == [0]


def test_nearest_mean_ties_go_to_the_earlier_sense():
    got = nearest_sense.nearest_mean(
        [[1.0, 0.0], [2.0, 0.0]], [0, 0], [5, 3], [[1.0, 1.0]], [0]
    )
    assert got.tolist() == [3]
    with pytest.raises(ValueError, match="training examples"):
        nearest_sense.nearest_mean([[1.0]], [0], [0], [[1.0]], [1])


def test_baselines_on_known_inputs():
    train_lemma = np.array([0, 0, 0, 1, 1, 2, 2])
    train_sense = np.array([2, 1, 2, 4, 3, 6, 5])
    test_lemma = np.array([0, 0, 1, 2, 2])
    test_sense = np.array([2, 0, 4, 5, 7])
    mfs = nearest_sense.most_frequent_sense(
        train_lemma, train_sense, test_lemma
    )
    assert mfs.tolist() == [2, 2, 3, 5, 5]  # lemma 1, 2: ties -> lower id
    first = nearest_sense.first_sense(train_lemma, train_sense, test_lemma)
    assert first.tolist() == [1, 1, 3, 5, 5]
    # candidates {1,2}, {1,2}, {3,4}, {5,6}, {5,6}; gold 0 and 7 unseen.
    expected = (1 / 2 + 0 + 1 / 2 + 1 / 2 + 0) / 5
    assert nearest_sense.random_sense_accuracy(
        train_lemma, train_sense, test_lemma, test_sense
    ) == pytest.approx(expected)


# --- bootstrap ------------------------------------------------------------


def test_bootstrap_on_known_inputs():
    acc, low, high, samples = nearest_sense.bootstrap(np.ones(50), 100)
    assert (acc, low, high) == (1.0, 1.0, 1.0)
    assert samples.shape == (1, 100)
    correct = np.arange(2000) % 4 == 0  # accuracy 0.25
    acc, low, high, _ = nearest_sense.bootstrap(correct, 1000, seed=1)
    assert acc == 0.25
    half_width = 1.96 * np.sqrt(0.25 * 0.75 / 2000)  # normal approximation
    assert low == pytest.approx(0.25 - half_width, abs=0.004)
    assert high == pytest.approx(0.25 + half_width, abs=0.004)
    # Seeded: the same draws again; rows are paired.
    again = nearest_sense.bootstrap(np.stack([correct, correct]), 1000, 1)
    assert again[1].tolist() == [low, low]


def test_paired_difference_on_known_inputs():
    rng = np.random.default_rng(0)
    b = rng.random(20) < 0.5
    same = nearest_sense.paired_difference(b, b, 500)
    assert same == {
        "difference": 0.0,
        "low": 0.0,
        "high": 0.0,
        "fraction_not_positive": 1.0,
    }
    # a is right on one more example than b: every resample's difference
    # is >= 0, and it is 0 exactly when that example is never drawn,
    # which has probability (1 - 1/20)^20 = 0.358.
    a = b.copy()
    a[np.flatnonzero(~b)[0]] = True
    diff = nearest_sense.paired_difference(a, b, 4000, seed=2)
    assert diff["difference"] == pytest.approx(1 / 20)
    assert diff["low"] == 0.0
    assert diff["fraction_not_positive"] == pytest.approx(0.95**20, abs=0.025)


def test_bootstrap_by_group():
    # Two groups: group 0 all right (3 examples), group 1 all wrong (1).
    correct = np.array([1.0, 1.0, 1.0, 0.0])
    _, _, _, samples = nearest_sense.bootstrap(
        correct, 400, seed=0, groups=[7, 7, 7, 9]
    )
    # Draws of 2 groups: {0,0} -> 1, {1,1} -> 0, one each -> 3/4.
    values, counts = np.unique(samples, return_counts=True)
    assert values.tolist() == [0.0, 0.75, 1.0]
    assert counts / 400 == pytest.approx([0.25, 0.5, 0.25], abs=0.07)
    with pytest.raises(ValueError, match="groups"):
        nearest_sense.bootstrap(correct, 10, groups=[1, 2])
