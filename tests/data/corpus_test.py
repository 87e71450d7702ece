"""Corpus listing and streaming statistics (`list_files`, `scan_corpus`)."""

import os

import pytest

from keras_elmo.data import CorpusStats
from keras_elmo.data import Vocabulary
from keras_elmo.data import list_files
from keras_elmo.data import scan_corpus
from tests.data.corpus_files import write

HERE = os.path.dirname(__file__)
SAMPLE = os.path.join(HERE, "en_pd_lm_sample.txt.gz")
VALID_SAMPLE = os.path.join(HERE, "en_pd_lm_valid_sample.txt.gz")


@pytest.fixture
def corpus_dir(tmp_path):
    write(
        tmp_path / "b.txt",
        b"the cat sat\n"
        b"\n"
        b"   \t\n"
        b"\xff\xfe bad\n"
        b"a b c d e f g\n"  # 7 tokens: 3 pieces at max_tokens=3
        b"caf\xc3\xa9 ok",  # no final newline
    )
    write(tmp_path / "a.txt.gz", b"the dog\r\n<S> zebra\n")
    return tmp_path


def test_list_files_sorted_unique(corpus_dir):
    pattern = str(corpus_dir / "*")
    expected = [str(corpus_dir / "a.txt.gz"), str(corpus_dir / "b.txt")]
    assert list_files(pattern) == expected
    assert list_files([str(corpus_dir / "b*"), pattern]) == expected
    assert list_files(corpus_dir / "b.txt") == expected[1:]


def test_list_files_errors(tmp_path):
    pattern = str(tmp_path / "train-*.txt")
    with pytest.raises(FileNotFoundError, match=r"train-\*\.txt.*matches no"):
        list_files(pattern)
    with pytest.raises(TypeError, match="`file_pattern` must be a glob"):
        list_files(3)
    with pytest.raises(TypeError, match="`file_pattern` must be a glob"):
        list_files([])


def test_scan_corpus_counts(corpus_dir):
    stats = scan_corpus(str(corpus_dir / "*"), max_tokens=3)
    assert stats == CorpusStats(
        files=2,
        lines=8,
        blank_lines=2,
        malformed_lines=1,
        sentences=7,  # 2 + 1 (the cat sat) + 3 (7 tokens) + 1 (café ok)
        tokens=3 + 7 + 2 + 2 + 2,
        oov_tokens=None,
    )
    assert scan_corpus(str(corpus_dir / "*")).sentences == 5
    assert stats.oov_rate is None
    assert "8 lines (2 blank, 1 not UTF-8 skipped)" in stats.summary()


def test_scan_corpus_oov(corpus_dir):
    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "the", "café", "a"])
    stats = scan_corpus(str(corpus_dir / "*"), vocabulary=vocab)
    # Known: the x2, <S>, café, a -> 5 of 16 tokens.
    assert (stats.tokens, stats.oov_tokens) == (16, 11)
    assert stats.oov_rate == pytest.approx(11 / 16)
    assert "11 OOV (68.75%)" in stats.summary()


def test_scan_corpus_argument_errors(corpus_dir):
    with pytest.raises(ValueError, match="`max_tokens`, expected a positive"):
        scan_corpus(str(corpus_dir / "*"), max_tokens=0)
    with pytest.raises(FileNotFoundError, match="nope"):
        scan_corpus(str(corpus_dir / "nope*"))


def test_scan_the_samples():
    stats = scan_corpus([SAMPLE, VALID_SAMPLE], max_tokens=100)
    assert (stats.files, stats.lines, stats.tokens) == (2, 3500, 139022)
    assert (stats.blank_lines, stats.malformed_lines) == (0, 0)
    assert stats.sentences == 3500 + 98  # awk: sum of ceil(NF / 100) - 1
