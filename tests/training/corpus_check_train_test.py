"""Training on a clean corpus behaves exactly as before the corpus check:
the same batches, the same weights with `--deterministic`; the check
prints its summary."""

import numpy as np
import pytest

from tests.training.training_helpers import TRAIN
from tests.training.training_helpers import hdf5_arrays
from tests.training.training_helpers import run_cli
from tests.training.training_helpers import tiny_train_args


def _batches(vocab, limit=20):
    from keras_elmo.data.lm_dataset import make_lm_dataset

    dataset = make_lm_dataset(TRAIN, vocab, 16, max_tokens=20, seed=5)
    out = []
    for features, targets in dataset.take(limit):
        out.append(
            [
                features["char_ids"].numpy(),
                targets["forward"].numpy(),
                targets["backward"].numpy(),
            ]
        )
    return out


def test_byte_order_mark_drop_leaves_the_sample_stream_unchanged(
    sample_vocab, monkeypatch
):
    """The sample corpus gives the same batches with the byte-order-mark
    step as with the pipeline before it (the step replaced by identity)."""
    from keras_elmo.data import lm_dataset
    from keras_elmo.data.vocabulary import Vocabulary

    vocab = Vocabulary.load(sample_vocab)
    now = _batches(vocab)
    monkeypatch.setattr(lm_dataset, "_drop_bom", lambda lines: lines)
    before = _batches(vocab)
    assert len(now) == len(before) == 20
    for a, b in zip(now, before):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.large
def test_checked_training_prints_health_and_matches_unchecked(
    sample_vocab, tmp_path
):
    flags = [
        "--epochs",
        "1",
        "--steps-per-epoch",
        "3",
        "--batch-size",
        "8",
        "--deterministic",
    ]
    checked = str(tmp_path / "checked")
    unchecked = str(tmp_path / "unchecked")
    done = run_cli(*tiny_train_args(sample_vocab, checked, *flags))
    assert done.returncode == 0, done.stderr
    assert f"corpus check --train: {TRAIN}: 3000 lines read" in done.stderr
    assert "corpus check --train: total 1 files, 3000 lines" in done.stderr
    skipped = run_cli(
        *tiny_train_args(sample_vocab, unchecked, *flags, "--skip-corpus-check")
    )
    assert skipped.returncode == 0, skipped.stderr
    assert "corpus check" not in skipped.stderr
    a = hdf5_arrays(f"{checked}/weights.hdf5")
    b = hdf5_arrays(f"{unchecked}/weights.hdf5")
    assert sorted(a) == sorted(b) and len(a) > 10
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
