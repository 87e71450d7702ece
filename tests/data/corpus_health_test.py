"""Corpus health: exact counts, and a clear stop on data that is wrong."""

import gzip
import random

import numpy as np
import pytest

from keras_elmo.data import corpus
from keras_elmo.data import corpus_health
from keras_elmo.data.corpus_health import CorpusError
from keras_elmo.data.corpus_health import HealthLimits
from keras_elmo.data.corpus_health import check_corpus
from keras_elmo.data.vocabulary import Vocabulary

VOCAB = Vocabulary(["<S>", "</S>", "<UNK>", "a", "b", "the", "cat"])


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_counts_of_a_mixed_file_are_exact(tmp_path):
    data = (
        b"the cat\n"  # 2 tokens
        b"\n"  # blank
        b"  \t \n"  # blank
        b"a \xff b\n"  # not UTF-8 (line 4)
        b"a b dog a b\n"  # 5 tokens, 1 OOV, over 3: 2 pieces (line 5)
        b"c\x00d a\n"  # 2 tokens, 1 OOV, a NUL
        b"x y z a b c d\n"  # 7 tokens, 5 OOV, 3 pieces (line 7)
    )
    path = write(tmp_path, "mixed.txt", data)
    limits = HealthLimits(max_nul_fraction=1.0, max_oov_rate=1.0)
    report = check_corpus("--train", path, VOCAB, max_tokens=3, limits=limits)
    (f,) = report.files
    assert (f.lines, f.blank, f.invalid_utf8, f.first_invalid) == (7, 2, 1, 4)
    assert (f.tokens, f.oov) == (2 + 5 + 2 + 7, 0 + 1 + 1 + 5)
    assert (f.long_lines, f.first_long, f.sentences) == (2, 5, 1 + 2 + 1 + 3)
    assert (f.nul_lines, f.nul_bytes, f.bytes) == (1, 1, len(data))
    # The training counts of `corpus.scan_corpus` agree.
    stats = corpus.scan_corpus(path, VOCAB, max_tokens=3)
    assert (stats.sentences, stats.tokens, stats.oov_tokens) == (7, 16, 7)
    summary = "\n".join(report.summary_lines())
    assert "7 lines read, 4 kept, 16 tokens, 43.8% OOV" in summary
    assert "skipped 2 blank, 1 not UTF-8 (first at line 4)" in summary
    assert "2 over 3 tokens split (first at line 5), 7 sentences" in summary


def _batches(path, vocab):
    from keras_elmo.data.lm_dataset import make_lm_dataset

    dataset = make_lm_dataset(
        path, vocab, 4, max_tokens=3, shuffle=True, seed=3
    )
    return [
        (f["char_ids"].numpy(), t["forward"].numpy(), t["backward"].numpy())
        for f, t in dataset
    ]


def test_crlf_and_utf8_bom_read_as_the_plain_file(tmp_path):
    lines = [b"the cat", b"a b the cat a", b"", b"\xc3\xa9t\xc3\xa9 a"]
    plain = write(tmp_path, "plain.txt", b"\n".join(lines) + b"\n")
    windows = write(
        tmp_path,
        "windows.txt",
        b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\r\n",
    )
    reports = [
        check_corpus("c", p, VOCAB, max_tokens=3) for p in (plain, windows)
    ]
    assert (
        reports[0].files[0].summary(3).split(":", 1)[1]
        == (reports[1].files[0].summary(3).split(":", 1)[1])
    )
    assert list(corpus.iter_sentences(plain)) == list(
        corpus.iter_sentences(windows)
    )
    assert corpus.count_tokens(windows)[0] == corpus.count_tokens(plain)[0]
    # In graph: the same batches, bit for bit.
    got, expected = _batches(windows, VOCAB), _batches(plain, VOCAB)
    assert len(got) == len(expected) == 1
    for x, y in zip(got[0], expected[0]):
        np.testing.assert_array_equal(x, y)
    # 4 sentences (one split in two); "the" (id 5) starts a sentence: the
    # byte-order mark did not stick to it.
    forward = got[0][1]
    assert forward.shape[0] == 4
    assert [5, 6, 1] in forward[:, :3].tolist()


def test_bom_drop_leaves_clean_lines_unchanged():
    import tensorflow as tf

    from keras_elmo.data.lm_dataset import _drop_bom

    lines = tf.constant(
        [b"", b"a", b"ab", b"abc d", b"\xef\xbb\xbfa b", b"\xef\xbb", b"\xff"]
    )
    got = _drop_bom(lines).numpy().tolist()
    assert got[:4] + got[5:] == [
        b"",
        b"a",
        b"ab",
        b"abc d",
        b"\xef\xbb",
        b"\xff",
    ]
    assert got[4].strip() == b"a b"


@pytest.mark.parametrize(
    "data, names",
    [
        ("the cat\n".encode("utf-16"), ["UTF-16 little-endian", "FF FE"]),
        ("the cat\n".encode("utf-16-be"), ["UTF-16BE", "without a byte"]),
        ("the cat\n".encode("utf-16-le"), ["UTF-16LE", "every other byte"]),
        (b"\xfe\xff" + "the cat\n".encode("utf-16-be"), ["UTF-16 big-endian"]),
        ("the cat\n".encode("utf-32"), ["UTF-32 little-endian"]),
    ],
)
def test_utf16_and_utf32_name_the_encoding_and_the_fix(tmp_path, data, names):
    path = write(tmp_path, "wide.txt", data)
    with pytest.raises(CorpusError) as raised:
        check_corpus("--train", path)
    message = str(raised.value)
    for name in names + [path, "not UTF-8", "iconv -f UTF-"]:
        assert name in message


def test_latin1_names_the_encoding_the_line_and_the_fix(tmp_path):
    text = "the cat\ncafé au lait\nnaïve a\n€ b\n"
    path = write(tmp_path, "latin.txt", text.encode("cp1252"))
    with pytest.raises(CorpusError) as raised:
        check_corpus("--train", path)
    message = str(raised.value)
    assert "3 of its 4 non-blank lines (75%) are not valid UTF-8" in message
    assert "first at line 2: b'caf\\xe9 au lait'" in message
    assert "Latin-1 / Windows-1252" in message
    assert f"iconv -f WINDOWS-1252 -t UTF-8 {path}" in message
    # At or under the threshold it is a warning and the lines are skipped.
    report = check_corpus(
        "--train", path, limits=HealthLimits(max_invalid_fraction=0.75)
    )
    assert report.files[0].kept == 1


def test_random_bytes_are_binary_data(tmp_path):
    rng = random.Random(0)
    data = bytes(rng.randrange(256) for _ in range(4000))
    path = write(tmp_path, "random.bin", data)
    with pytest.raises(CorpusError) as raised:
        check_corpus("--train", path)
    message = str(raised.value)
    assert path in message and "first at line 1" in message
    assert "binary data, not sentence-per-line text" in message


def test_nul_bytes_over_the_threshold_are_binary(tmp_path):
    path = write(tmp_path, "zeros.txt", b"a b\n" + bytes(36))
    with pytest.raises(CorpusError) as raised:
        check_corpus("--train", path)
    assert "36 of its 40 bytes are NUL (90%" in str(raised.value)
    assert "`max_nul_fraction=0.1`; first at line 2)" in str(raised.value)
    # A stray NUL in a line is counted, not fatal.
    path = write(tmp_path, "stray.txt", b"c\x00d a\nthe cat a b the cat\n")
    assert check_corpus("c", path).files[0].nul_lines == 1


def test_classic_mac_line_ends(tmp_path):
    path = write(tmp_path, "mac.txt", b"the cat\ra b\rthe a\r")
    with pytest.raises(CorpusError) as raised:
        check_corpus("--train", path)
    assert "classic Mac" in str(raised.value)
    assert "(first at line 1)" in str(raised.value)
    assert f"tr '\\r' '\\n' < {path}" in str(raised.value)


def test_foreign_vocabulary_stops_at_the_threshold(tmp_path):
    path = write(tmp_path, "other.txt", b"der hund a\ndie katze the\n")
    with pytest.raises(CorpusError) as raised:
        check_corpus("--train", path, VOCAB)
    message = str(raised.value)
    assert path in message
    assert (
        "4 of its 6 tokens (66.7%) are not in the vocabulary (first 'der' "
        "at line 1)"
    ) in message
    assert "`max_oov_rate=0.5`" in message
    report = check_corpus(
        "--train", path, VOCAB, limits=HealthLimits(max_oov_rate=0.7)
    )
    assert report.files[0].oov == 4


def test_nothing_usable_left(tmp_path):
    path = write(tmp_path, "blank.txt", b"\n  \n\xff\xfe\xfd x\n\n")
    limits = HealthLimits(max_invalid_fraction=1.0)
    with pytest.raises(CorpusError) as raised:
        check_corpus("--train", path, limits=limits)
    assert "`--train`" in str(raised.value)
    assert "holds no sentence" in str(raised.value)
    assert "4 lines in 1 files" in str(raised.value)
    report = check_corpus("x", path, limits=limits, require_sentences=False)
    assert report.sentences == 0


def test_gzip_problems_name_the_file(tmp_path):
    text = b"".join(b"the cat a b %d\n" % i for i in range(5000))
    packed = gzip.compress(text)
    cases = [
        ("plain.txt", packed, "gzip-compressed data but its name"),
        ("fake.txt.gz", text, "is named .gz but is not readable gzip"),
        ("cut.txt.gz", packed[: len(packed) // 2], "is damaged gzip data"),
    ]
    for name, data, expected in cases:
        path = write(tmp_path, name, data)
        with pytest.raises(CorpusError) as raised:
            check_corpus("--train", path)
        assert path in str(raised.value) and expected in str(raised.value)
    good = write(tmp_path, "good.txt.gz", packed)
    assert check_corpus("c", good).files[0].lines == 5000


@pytest.mark.parametrize("field", ["max_invalid_fraction", "max_oov_rate"])
@pytest.mark.parametrize("value", [-0.1, 1.5, "0.5", True])
def test_limits_name_the_flag(field, value):
    with pytest.raises(ValueError) as raised:
        HealthLimits(**{field: value})
    flag = "--" + field.replace("_", "-")
    assert f"`{flag}`" in str(raised.value)
    assert "fraction in [0, 1]" in str(raised.value)


def test_defaults_are_documented():
    doc = corpus_health.__doc__
    assert f"(default {corpus_health.DEFAULT_MAX_INVALID_FRACTION}" in doc
    assert f"(default {corpus_health.DEFAULT_MAX_NUL_FRACTION})" in doc
    assert f"(default {corpus_health.DEFAULT_MAX_OOV_RATE})" in doc
