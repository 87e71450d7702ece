"""Nearest-sense classification (Peters et al. 2018, Sec. 5.3) and the
statistics to compare it with baselines.

Word sense disambiguation as in the paper's Table 5: for each sense `s`
of a lemma, the mean of the biLM vectors of its training examples,

    m_s = (1 / |train_s|) sum_{i in train_s} h_i          [D]

and a test occurrence `h` of the lemma gets the sense whose mean is the
most similar, `argmax_s cos(h, m_s)` (1-nearest neighbour among the
sense means). Candidates are the senses of the same lemma seen in
training; every test example gets a prediction, so precision = recall
= accuracy = F1.

Inputs are integer-coded: `lemma` ids group the examples, `sense` ids
are global and ordered so that, within a lemma, a lower id is an
earlier WordNet sense (ties go to the lower id everywhere).
"""

import numpy as np


def _candidates(train_lemma, train_sense):
    """`{lemma: sorted array of the sense ids seen in training}`."""
    pairs = np.unique(np.stack([train_lemma, train_sense], axis=1), axis=0)
    out = {}
    for lemma, sense in pairs:
        out.setdefault(int(lemma), []).append(int(sense))
    return {k: np.array(v) for k, v in out.items()}


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def nearest_mean(train_x, train_lemma, train_sense, test_x, test_lemma):
    """Predicted sense id per test example (see module docstring).

    Args:
        train_x: float `[N, D]` training vectors.
        train_lemma, train_sense: int `[N]`.
        test_x: float `[M, D]`; test_lemma: int `[M]`, each a lemma with
            training examples.

    Returns:
        int `[M]`.
    """
    train_lemma, train_sense, test_lemma = _ints(
        train_lemma, train_sense, test_lemma
    )
    _check_covered(test_lemma, train_lemma)
    train_x = np.asarray(train_x, dtype=np.float64)
    test_x = _unit(test_x)
    predicted = np.empty(len(test_lemma), dtype=np.int64)
    for lemma, senses in _candidates(train_lemma, train_sense).items():
        rows = np.flatnonzero(test_lemma == lemma)
        if rows.size == 0:
            continue
        in_lemma = train_lemma == lemma
        means = np.stack(
            [train_x[in_lemma & (train_sense == s)].mean(0) for s in senses]
        )
        similarity = test_x[rows] @ _unit(means).T  # [rows, senses]
        predicted[rows] = senses[np.argmax(similarity, axis=1)]
    return predicted


def most_frequent_sense(train_lemma, train_sense, test_lemma):
    """Per test example, its lemma's most frequent sense in training
    (ties: the earlier WordNet sense)."""
    train_lemma, train_sense, test_lemma = _ints(
        train_lemma, train_sense, test_lemma
    )
    choice = {}
    for lemma, senses in _candidates(train_lemma, train_sense).items():
        counts = [
            np.sum((train_lemma == lemma) & (train_sense == s)) for s in senses
        ]
        choice[lemma] = senses[int(np.argmax(counts))]
    _check_covered(test_lemma, train_lemma)
    return np.array([choice[int(k)] for k in test_lemma], dtype=np.int64)


def first_sense(train_lemma, train_sense, test_lemma):
    """Per test example, the earliest WordNet sense (lowest id) among its
    lemma's senses seen in training."""
    choice = {k: v[0] for k, v in _candidates(train_lemma, train_sense).items()}
    _check_covered(test_lemma, train_lemma)
    return np.array([choice[int(k)] for k in test_lemma], dtype=np.int64)


def random_sense_accuracy(train_lemma, train_sense, test_lemma, test_sense):
    """Expected accuracy of a sense drawn uniformly from the lemma's
    training senses: `mean_i [y_i in C(l_i)] / |C(l_i)|`."""
    candidates = _candidates(train_lemma, train_sense)
    _check_covered(test_lemma, train_lemma)
    hits = [
        float(np.isin(y, candidates[int(k)])) / len(candidates[int(k)])
        for k, y in zip(test_lemma, test_sense)
    ]
    return float(np.mean(hits))


def _ints(*arrays):
    return [np.asarray(a, dtype=np.int64) for a in arrays]


def _check_covered(test_lemma, train_lemma):
    missing = np.setdiff1d(test_lemma, train_lemma)
    if missing.size:
        raise ValueError(
            "Every test lemma needs training examples; lemma ids "
            f"{missing[:5].tolist()} have none."
        )


def bootstrap(correct, resamples=1000, seed=0, level=0.95, groups=None):
    """Percentile bootstrap of accuracies over test examples.

    Each resample draws `n` test examples with replacement (the same
    draws for every row of `correct`, so rows are paired). With `groups`
    (e.g. the lemma of each example) it draws `G` groups with replacement
    instead and scores all their examples: `sum_g w_g c_g / sum_g w_g n_g`
    with `w_g` the number of draws of group `g`, `c_g` its correct count
    and `n_g` its size; an interval that allows for examples of one lemma
    being correlated.

    Args:
        correct: bool or float `[n]` or `[K, n]` (1 = right).
        resamples: int. seed: int. level: float in (0, 1).
        groups: None or int `[n]`.

    Returns:
        `(accuracy, low, high, samples)`: `[K]` arrays (scalars for 1-D
        input) and the `[K, resamples]` resampled accuracies.
    """
    correct = np.asarray(correct, dtype=np.float64)
    rows = np.atleast_2d(correct)
    if rows.shape[-1] == 0:
        raise ValueError("`correct` is empty: no test examples.")
    if not 0.0 < level < 1.0:
        raise ValueError(f"Expected `level` in (0, 1), received {level!r}.")
    n = rows.shape[-1]
    rng = np.random.default_rng(seed)
    samples = np.empty((rows.shape[0], resamples))
    if groups is None:
        for r in range(resamples):
            samples[:, r] = rows[:, rng.integers(0, n, size=n)].mean(axis=1)
    else:
        groups = np.asarray(groups)
        if groups.shape != (n,):
            raise ValueError(
                f"Expected `groups` of shape ({n},), one per example; "
                f"received {groups.shape}."
            )
        _, index = np.unique(groups, return_inverse=True)
        size = np.bincount(index).astype(np.float64)  # [G]
        hits = np.stack([np.bincount(index, weights=row) for row in rows])
        for r in range(resamples):
            draws = np.bincount(
                rng.integers(0, size.size, size=size.size),
                minlength=size.size,
            )
            samples[:, r] = hits @ draws / (size @ draws)
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(samples, [tail, 100.0 - tail], axis=1)
    accuracy = rows.mean(axis=1)
    if correct.ndim == 1:
        return accuracy[0], low[0], high[0], samples
    return accuracy, low, high, samples


def paired_difference(
    correct_a, correct_b, resamples=1000, seed=0, groups=None
):
    """Bootstrap of `accuracy(a) - accuracy(b)` on the same test examples
    (over examples, or over `groups` as in `bootstrap`).

    Returns:
        dict: `difference`, `low`, `high` (95% percentile interval) and
        `fraction_not_positive`, the share of resamples where `a` is not
        better than `b` (a one-sided bootstrap p-value for "a > b").
    """
    a = np.asarray(correct_a, dtype=np.float64)
    b = np.asarray(correct_b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(
            "`correct_a` and `correct_b` must score the same examples; "
            f"received shapes {a.shape} and {b.shape}."
        )
    difference, low, high, samples = bootstrap(
        a - b, resamples, seed, groups=groups
    )
    return {
        "difference": float(difference),
        "low": float(low),
        "high": float(high),
        "fraction_not_positive": float(np.mean(samples <= 0.0)),
    }
