"""`make_lm_dataset`: exact ids and targets, determinism, replica slicing."""

import collections
import functools
import gzip
import os

import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo.data import Vocabulary
from keras_elmo.data import make_lm_dataset
from keras_elmo.data import scan_corpus
from tests.data.corpus_files import write

HERE = os.path.dirname(__file__)
SAMPLE = os.path.join(HERE, "en_pd_lm_sample.txt.gz")
VALID_SAMPLE = os.path.join(HERE, "en_pd_lm_valid_sample.txt.gz")

# ids: <S> 0, </S> 1, <UNK> 2, the 3, cat 4, sat 5, dog 6
VOCAB = Vocabulary(["<S>", "</S>", "<UNK>", "the", "cat", "sat", "dog"])


@pytest.fixture
def small_corpus(tmp_path):
    write(tmp_path / "b.txt.gz", b"dog\n\nthe  cat\tsat zebra\n")
    write(
        tmp_path / "a.txt",
        b"the cat sat\n"
        b"   \n"
        b"\xff\xfe bad\n"
        b"the dog the cat sat the end\n"  # 7 tokens -> pieces 3 + 3 + 1
        b"caf\xc3\xa9",
    )
    return str(tmp_path / "*")


# The small corpus at max_tokens=3, in file order (a.txt, then b.txt.gz).
SMALL_SENTENCES = [
    ["the", "cat", "sat"],
    ["the", "dog", "the"],
    ["cat", "sat", "the"],
    ["end"],
    ["café"],
    ["dog"],
    ["the", "cat", "sat"],
    ["zebra"],
]


def batches(dataset):
    """All batches as nested dicts of NumPy arrays."""
    return [
        (
            {k: v.numpy() for k, v in f.items()},
            {k: v.numpy() for k, v in t.items()},
        )
        for f, t in dataset
    ]


def split_pieces(tokens, max_tokens):
    return [
        tokens[i : i + max_tokens] for i in range(0, len(tokens), max_tokens)
    ]


def reference_sentences(paths, max_tokens):
    """The corpus rules, re-derived in Python (files in the given order)."""
    out = []
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            for line in f:
                try:
                    tokens = line.decode("utf-8").split()
                except UnicodeDecodeError:
                    continue
                if tokens:
                    out.extend(split_pieces(tokens, max_tokens))
    return out


def reference_targets(sentences, vocab):
    """`[B, T + 1]` forward and backward targets, padded with -1."""
    width = max(len(s) for s in sentences) + 1
    forward = np.full((len(sentences), width), -1, np.int32)
    backward = np.full((len(sentences), width), -1, np.int32)
    for i, sentence in enumerate(sentences):
        ids = [0] + [vocab.token_to_id(t) for t in sentence] + [1]
        forward[i, : len(ids) - 1] = ids[1:]
        backward[i, : len(ids) - 1] = ids[:-1]
    return forward, backward


def test_exact_ids_and_targets(small_corpus):
    dataset = make_lm_dataset(
        small_corpus, VOCAB, 3, max_tokens=3, shuffle=False
    )
    got = batches(dataset)
    assert [f["char_ids"].shape for f, _ in got] == [
        (3, 3, 50),
        (3, 1, 50),
        (2, 3, 50),
    ]
    forward = [t["forward"].tolist() for _, t in got]
    backward = [t["backward"].tolist() for _, t in got]
    assert forward == [
        [[3, 4, 5, 1], [3, 6, 3, 1], [4, 5, 3, 1]],
        [[2, 1], [2, 1], [6, 1]],
        [[3, 4, 5, 1], [2, 1, -1, -1]],
    ]
    assert backward == [
        [[0, 3, 4, 5], [0, 3, 6, 3], [0, 4, 5, 3]],
        [[0, 2], [0, 2], [0, 6]],
        [[0, 3, 4, 5], [0, 2, -1, -1]],
    ]
    for (features, targets), start in zip(got, [0, 3, 6]):
        sentences = SMALL_SENTENCES[start : start + 3]
        np.testing.assert_array_equal(
            features["char_ids"], keras_elmo.batch_to_ids(sentences)
        )
        assert features["char_ids"].dtype == np.int32
        assert targets["forward"].dtype == np.int32


def test_sample_full_pass_matches_python_reference():
    vocab = Vocabulary.build(VALID_SAMPLE, min_count=2)
    sentences = reference_sentences([VALID_SAMPLE], 20)
    got = batches(
        make_lm_dataset(VALID_SAMPLE, vocab, 64, max_tokens=20, shuffle=False)
    )
    assert sum(len(f["char_ids"]) for f, _ in got) == len(sentences)
    assert len(sentences) == scan_corpus(VALID_SAMPLE, max_tokens=20).sentences
    for step, (features, targets) in enumerate(got):
        batch = sentences[64 * step : 64 * (step + 1)]
        np.testing.assert_array_equal(
            features["char_ids"], keras_elmo.batch_to_ids(batch)
        )
        forward, backward = reference_targets(batch, vocab)
        np.testing.assert_array_equal(targets["forward"], forward)
        np.testing.assert_array_equal(targets["backward"], backward)
    oov = sum(int(np.sum(t["forward"] == vocab.unk_id)) for _, t in got)
    assert oov == scan_corpus(VALID_SAMPLE, vocab).oov_tokens


def _sample_dataset(seed=0, **kwargs):
    defaults = dict(
        max_tokens=30,
        shuffle_buffer=300,
        seed=seed,
        repeat=True,
        bucket_boundaries=[10, 20],
    )
    defaults.update(kwargs)
    return make_lm_dataset(SAMPLE, _sample_vocab(), 8, **defaults)


@functools.cache
def _sample_vocab():
    return Vocabulary.build(SAMPLE, max_size=500)


def _first(dataset, steps):
    return batches(dataset.take(steps))


def _equal(a, b):
    return len(a) == len(b) and all(
        np.array_equal(x[0]["char_ids"], y[0]["char_ids"])
        and np.array_equal(x[1]["forward"], y[1]["forward"])
        and np.array_equal(x[1]["backward"], y[1]["backward"])
        for x, y in zip(a, b)
    )


@pytest.fixture(scope="module")
def seed0_batches():
    """15 shuffled, bucketed batches of the sample with seed 0."""
    return _first(_sample_dataset(seed=0), 15)


def test_same_seed_same_batches_other_seed_differs(seed0_batches):
    assert _equal(seed0_batches, _first(_sample_dataset(seed=0), 15))
    assert not _equal(seed0_batches, _first(_sample_dataset(seed=2), 15))


def test_each_epoch_reshuffled_deterministically(small_corpus):
    def epochs(dataset):
        return [
            [
                row[row >= 0].tolist()
                for _, t in batches(dataset)
                for row in t["forward"]
            ]
            for _ in range(3)
        ]

    def make():
        return make_lm_dataset(small_corpus, VOCAB, 3, max_tokens=3, seed=4)

    runs = epochs(make())
    assert runs == epochs(make())
    assert runs[0] != runs[1] or runs[1] != runs[2]
    # Each epoch holds every sentence exactly once.
    canonical = sorted(map(tuple, runs[0]))
    for epoch in runs:
        assert sorted(map(tuple, epoch)) == canonical


def test_bucketing_groups_by_length(seed0_batches):
    for _, targets in seed0_batches:
        lengths = np.sum(targets["forward"] >= 0, axis=1) - 1
        buckets = np.searchsorted([10, 20], lengths, side="right")
        assert len(set(buckets.tolist())) == 1, lengths
        assert len(lengths) == 8


def test_replicas_together_equal_the_single_process_batch(seed0_batches):
    # Shuffled, bucketed, repeated; plain batches: the partial-batch test.
    single = seed0_batches
    parts = [
        _first(_sample_dataset(replica_index=r, num_replicas=2), 15)
        for r in range(2)
    ]
    for step, (features, targets) in enumerate(single):
        (f0, t0), (f1, t1) = parts[0][step], parts[1][step]
        assert f0["char_ids"].shape == (4,) + features["char_ids"].shape[1:]
        np.testing.assert_array_equal(
            np.concatenate([f0["char_ids"], f1["char_ids"]]),
            features["char_ids"],
        )
        for key in ("forward", "backward"):
            np.testing.assert_array_equal(
                np.concatenate([t0[key], t1[key]]), targets[key]
            )


def test_final_partial_batch_split_evenly(small_corpus):
    # 8 sentences, global batch 6 -> a final batch of 2 over 3 replicas.
    parts = [
        batches(
            make_lm_dataset(
                small_corpus,
                VOCAB,
                6,
                max_tokens=3,
                shuffle=False,
                replica_index=r,
                num_replicas=3,
            )
        )
        for r in range(3)
    ]
    assert [len(p) for p in parts] == [2, 2, 2]  # same number of steps
    assert [len(p[0][0]["char_ids"]) for p in parts] == [2, 2, 2]
    assert [len(p[1][0]["char_ids"]) for p in parts] == [1, 1, 0]
    empty_features, empty_targets = parts[2][1]
    assert empty_features["char_ids"].shape == (0, 3, 50)
    assert empty_targets["forward"].shape == (0, 4)
    assert empty_targets["backward"].shape == (0, 4)
    for step in range(2):
        sentences = SMALL_SENTENCES[6 * step : 6 * (step + 1)]
        forward, backward = reference_targets(sentences, VOCAB)
        for key, expected in (("forward", forward), ("backward", backward)):
            np.testing.assert_array_equal(
                np.concatenate([p[step][1][key] for p in parts]), expected
            )
        np.testing.assert_array_equal(
            np.concatenate([p[step][0]["char_ids"] for p in parts]),
            keras_elmo.batch_to_ids(sentences),
        )


def test_drop_remainder_gives_static_full_batches(small_corpus):
    dataset = make_lm_dataset(
        small_corpus,
        VOCAB,
        4,
        max_tokens=3,
        shuffle=False,
        drop_remainder=True,
        replica_index=1,
        num_replicas=2,
    )
    features_spec, targets_spec = dataset.element_spec
    assert features_spec["char_ids"].shape.as_list() == [2, None, 50]
    assert targets_spec["forward"].shape.as_list() == [2, None]
    got = batches(dataset)
    assert [len(f["char_ids"]) for f, _ in got] == [2, 2]
    repeated = make_lm_dataset(
        small_corpus, VOCAB, 4, max_tokens=3, repeat=True
    )
    assert repeated.element_spec[0]["char_ids"].shape.as_list() == [
        4,
        None,
        50,
    ]


def test_shuffled_pass_sees_every_sentence_once():
    def make(**kwargs):
        return make_lm_dataset(
            VALID_SAMPLE,
            _sample_vocab(),
            32,
            max_tokens=30,
            shuffle_buffer=200,
            bucket_boundaries=[10, 20],
            **kwargs,
        )

    shuffled = batches(make())
    ordered = batches(make(shuffle=False))

    def rows(got):
        return collections.Counter(
            tuple(row[row >= 0].tolist())
            for _, t in got
            for row in t["forward"]
        )

    assert rows(shuffled) == rows(ordered)
    assert (
        sum(rows(ordered).values())
        == scan_corpus(VALID_SAMPLE, max_tokens=30).sentences
    )


def test_options_deterministic_and_no_auto_shard(small_corpus):
    options = make_lm_dataset(small_corpus, VOCAB, 2).options()
    assert options.deterministic is True
    assert (
        options.experimental_distribute.auto_shard_policy
        == tf.data.experimental.AutoShardPolicy.OFF
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"global_batch_size": 0}, r"`global_batch_size`, expected a posi"),
        ({"max_tokens": 0}, r"`max_tokens`, expected a positive integer or"),
        ({"num_replicas": 3}, r"`global_batch_size` \(4\) must be divisible"),
        ({"replica_index": 2, "num_replicas": 2}, r"`replica_index`.*\[0, 2\)"),
        ({"bucket_boundaries": [5, 5]}, r"`bucket_boundaries`, expected"),
        ({"bucket_boundaries": []}, r"`bucket_boundaries`, expected"),
        ({"seed": None}, r"`seed`, expected an integer"),
    ],
)
def test_argument_errors(small_corpus, kwargs, message):
    args = dict(global_batch_size=4)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        make_lm_dataset(small_corpus, VOCAB, **args)


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="matches no file"):
        make_lm_dataset(str(tmp_path / "*.txt"), VOCAB, 2)
