"""`Vocabulary`: the bilm-tf vocabulary file, building, lookup."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.data import Vocabulary
from tests.data.corpus_files import write

SPECIALS = ["<S>", "</S>", "<UNK>"]
SAMPLE = os.path.join(os.path.dirname(__file__), "en_pd_lm_sample.txt.gz")


def test_ids_and_lookup():
    vocab = Vocabulary(SPECIALS + ["the", "cat", "é"])
    assert (vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2)
    assert vocab.size == len(vocab) == 6
    assert vocab.tokens == ("<S>", "</S>", "<UNK>", "the", "cat", "é")
    assert [vocab.token_to_id(t) for t in ["<S>", "the", "é", "dog"]] == [
        0,
        3,
        5,
        2,
    ]
    assert vocab.id_to_token(4) == "cat"
    with pytest.raises(IndexError, match="0 <= id < 6, got 6"):
        vocab.id_to_token(6)
    table = vocab.lookup_table()
    assert vocab.lookup_table() is table  # cached
    ids = table.lookup(tf.constant([["cat", "é"], ["dog", ""]]))
    assert ids.dtype == tf.int32
    np.testing.assert_array_equal(ids, [[4, 5], [2, 2]])


def test_lookup_table_inside_tf_function():
    vocab = Vocabulary(SPECIALS + ["a"])

    @tf.function
    def lookup(x):
        return vocab.lookup_table().lookup(x)

    np.testing.assert_array_equal(lookup(tf.constant(["a", "b"])), [3, 2])


@pytest.mark.parametrize(
    "tokens, message",
    [
        (["<S>", "<UNK>", "</S>", "a"], r"first three must be"),
        (["a", "b"], r"first three must be"),
        (SPECIALS + ["a", "b", "a"], r"'a' at line 6 \(id 5\) repeats line 4"),
        (SPECIALS + ["a", "<S>"], r"'<S>' at line 5 \(id 4\) repeats line 1"),
        (SPECIALS + [""], r"'' at line 4 \(id 3\) is empty"),
        (SPECIALS + ["a b"], r"'a b' at line 4 .* contains whitespace"),
        (SPECIALS + ["a\tb"], r"contains whitespace"),
        (SPECIALS + [3], r"must be a str, received int"),
    ],
)
def test_invalid_tokens(tokens, message):
    with pytest.raises(ValueError, match=message):
        Vocabulary(tokens)


def test_non_ascii_space_is_part_of_a_token():
    # The pipeline splits on ASCII whitespace only (tf.strings.split).
    assert Vocabulary(SPECIALS + ["a\u00a0b"]).token_to_id("a\u00a0b") == 3


def test_save_load_round_trip(tmp_path):
    vocab = Vocabulary(SPECIALS + ["the", "Zürich", "日本"])
    path = tmp_path / "sub" / "vocab.txt"
    vocab.save(path)
    assert path.read_bytes() == "<S>\n</S>\n<UNK>\nthe\nZürich\n日本\n".encode()
    assert Vocabulary.load(path) == vocab
    assert os.listdir(path.parent) == ["vocab.txt"]  # no temporary left


@pytest.mark.parametrize(
    "data",
    [
        b"<S>\n</S>\n<UNK>\nthe\ncat\n",
        b"<S>\n</S>\n<UNK>\nthe\ncat",
        b"<S>\n</S>\n<UNK>\nthe\ncat\n\n",
        b"<S>\r\n</S>\r\n<UNK>\r\nthe\r\ncat\r\n",
        b"\xef\xbb\xbf<S>\n</S>\n<UNK>\nthe\ncat\n",
    ],
)
def test_load_tolerates_line_ends(tmp_path, data):
    vocab = Vocabulary.load(write(tmp_path / "v.txt", data))
    assert vocab.tokens == tuple(SPECIALS + ["the", "cat"])


@pytest.mark.parametrize(
    "data, message",
    [
        (
            b"the\n<S>\n</S>\n<UNK>\n",
            r"line 1: the first three lines must be \['<S>', '</S>', "
            r"'<UNK>'\] \(bilm-tf format\), found \['the', '<S>', '</S>'\]",
        ),
        (b"<S>\n</S>\n", r"line 3: the first three lines .* found"),
        (b"<S>\n</S>\n<UNK>\nthe\n\ncat\n", r"line 5: expected one token"),
        (b"<S>\n</S>\n<UNK>\nthe cat\n", r"line 4: expected one token, found"),
        (b"<S>\n</S>\n<UNK>\na\nb\na\n", r"line 6 \(id 5\) repeats line 4"),
        (b"<S>\n</S>\n<UNK>\nok\n\xff\xfe\n", r"line 5: expected UTF-8"),
    ],
)
def test_load_errors_name_file_and_line(tmp_path, data, message):
    path = write(tmp_path / "bad_vocab.txt", data)
    with pytest.raises(ValueError, match=message) as error:
        Vocabulary.load(path)
    assert "bad_vocab.txt" in str(error.value)


def test_load_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        Vocabulary.load(tmp_path / "missing.txt")


def test_build_orders_by_count_then_token(tmp_path):
    corpus = write(
        tmp_path / "c.txt",
        b"b a c\n"
        b"a b\n"
        b"\n"
        b"  \t \n"
        b"d c a\n"
        b"\xff\xfe bad\n"  # not UTF-8: skipped whole, "bad" never counted
        b"<S> <UNK> e </S>\n",
    )
    vocab = Vocabulary.build(corpus)
    # a:3, b:2, c:2, d:1, e:1; specials in the corpus are not repeated.
    assert vocab.tokens == tuple(SPECIALS + ["a", "b", "c", "d", "e"])
    assert Vocabulary.build(corpus, min_count=2).tokens[3:] == ("a", "b", "c")
    assert Vocabulary.build(corpus, max_size=5).tokens[3:] == ("a", "b")
    assert Vocabulary.build(corpus, max_size=3).tokens == tuple(SPECIALS)


def test_build_gzip_and_several_patterns(tmp_path):
    write(tmp_path / "x1.txt.gz", b"z y\nz\n")
    write(tmp_path / "x2.txt", b"y z x\n")
    write(tmp_path / "other.txt", b"w w w w\n")
    vocab = Vocabulary.build(str(tmp_path / "x*"))
    assert vocab.tokens[3:] == ("z", "y", "x")
    vocab = Vocabulary.build([str(tmp_path / "x1*"), str(tmp_path / "o*")])
    assert vocab.tokens[3:] == ("w", "z", "y")


def test_build_streams_an_iterator_of_lines(tmp_path, monkeypatch):
    # A file is iterated line by line, never read whole.
    path = write(tmp_path / "c.txt", b"a b\n" * 1000)
    reads = []
    real_open = open

    class Spy:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def __iter__(self):
            return iter(self.f)

        def read(self, *args):
            reads.append(args)
            return self.f.read(*args)

    from keras_elmo.data import corpus

    monkeypatch.setattr(
        corpus, "open", lambda p, m: Spy(real_open(p, m)), raising=False
    )
    assert Vocabulary.build(path).tokens[3:] == ("a", "b")
    assert reads == []


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"min_count": 0}, r"`min_count`, expected a positive integer, got 0"),
        ({"max_size": 2}, r"`max_size`, expected None or an integer >= 3"),
    ],
)
def test_build_argument_errors(tmp_path, kwargs, message):
    corpus = write(tmp_path / "c.txt", b"a\n")
    with pytest.raises(ValueError, match=message):
        Vocabulary.build(corpus, **kwargs)


def test_build_missing_corpus(tmp_path):
    pattern = str(tmp_path / "nothing*.txt")
    with pytest.raises(FileNotFoundError, match="nothing"):
        Vocabulary.build(pattern)


def test_build_on_the_sample():
    vocab = Vocabulary.build(SAMPLE)
    assert vocab.tokens[3:8] == ("the", "of", ",", "to", "and")
    assert Vocabulary.build(SAMPLE, max_size=100).size == 100
