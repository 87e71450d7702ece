"""`export_word2vec` and `keras-elmo export --format word2vec`: layer 0's
context-free vectors of a vocabulary in word2vec text format.

Every vector the file holds must equal the biLM's own `word_emb` output
for that token, computed directly at its position in a sentence run
through the whole biLM (and alone), within `ROUNDING` of the largest
value: the char-CNN, highway and projection sums of a token are rounded
in float32 in an order that depends on how many tokens share the call
(one ulp of difference is usual, on the tiny models here; on
elmo_small_en the vectors came out bit-equal). The printed values
themselves are exact: a float32 parse of the file gives back the arrays
the export computed, bit for bit. The file is parsed with numpy as a
word2vec text reader does (and, where gensim is installed, with gensim
too).
"""

import os
import shutil

import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.export.portable import export_word2vec
from keras_elmo.export.portable import layer0_vectors
from tests import efml_reference
from tests.conftest import tiny_bilm

# Of the largest absolute value: float32 rounding (measured up to 4e-8).
ROUNDING = 1e-6
TOKENS = [
    "The", "cat", "sat", "on", "the", "mat", ".", "naïve", "x" * 60,
    "😀", "<S>", "</S>", "<UNK>", "Hello", ",", "world", "don't",
]  # fmt: skip


def parse_word2vec(path):
    """`(tokens, vectors [N, D] float32)` of a word2vec text file: the
    header `N D`, then `word v_1 .. v_D` per line, single spaces."""
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    assert lines[-1] == ""  # every line ends with "\n"
    count, dim = (int(v) for v in lines[0].split(" "))
    rows = [line.split(" ") for line in lines[1:-1]]
    assert len(rows) == count
    assert {len(row) for row in rows} == {dim + 1}
    tokens = [row[0] for row in rows]
    vectors = np.array([row[1:] for row in rows], dtype=np.float32)
    return tokens, vectors


def sentence_word_emb(bilm, sentences):
    """`{token: word_emb}` of every token of `sentences`, each sentence
    run through the whole biLM on its string tokens."""
    found = {}
    for sentence in sentences:
        inputs = bilm.encode_tokens(efml_reference.padded([sentence]))
        out = np.asarray(bilm(inputs)["word_emb"])[0]
        for position, token in enumerate(sentence):
            found.setdefault(token, out[position])
    return found


def assert_layer0(tokens, vectors, expected):
    """Each token's vector is `expected[token]` within `ROUNDING`."""
    scale = float(np.abs(vectors).max())
    assert scale > 0.01  # not a comparison of near-zeros
    for token, vector in zip(tokens, vectors):
        np.testing.assert_allclose(
            vector,
            expected[token],
            rtol=0,
            atol=ROUNDING * scale,
            err_msg=token,
        )


def gensim_check(path, tokens, vectors):
    try:
        from gensim.models import KeyedVectors
    except ImportError:  # a bonus reader: numpy has parsed the file
        return
    loaded = KeyedVectors.load_word2vec_format(str(path), binary=False)
    assert list(loaded.index_to_key) == tokens
    np.testing.assert_array_equal(loaded.vectors, vectors)


def test_vectors_are_the_bilms_layer_0_exactly(tmp_path):
    bilm = tiny_bilm(7)
    path = tmp_path / "vectors.txt"
    # batch_size 4: the 17 tokens in five char-CNN calls.
    assert export_word2vec(bilm, path, TOKENS, batch_size=4) == str(path)
    tokens, vectors = parse_word2vec(path)
    assert tokens == TOKENS
    assert vectors.shape == (len(TOKENS), bilm.config.projection_dim)
    # In sentences of mixed lengths through the whole biLM (`<S>` and
    # `</S>` inside a sentence are the boundary tokens' ids, as at the
    # sentence's edges).
    sentences = [TOKENS[:7], TOKENS[7:10], TOKENS[10:], ["alone"]]
    assert_layer0(tokens, vectors, sentence_word_emb(bilm, sentences))
    # Each token alone gives the same vector.
    alone = sentence_word_emb(bilm, [[token] for token in TOKENS])
    assert_layer0(tokens, vectors, alone)
    # The text holds exactly what was computed: each batch of 4 again.
    for start in range(0, len(TOKENS), 4):
        np.testing.assert_array_equal(
            vectors[start : start + 4],
            layer0_vectors(bilm, TOKENS[start : start + 4]),
        )
    gensim_check(path, tokens, vectors)


def test_vocabulary_file_and_elmo_layer(tmp_path):
    bilm = tiny_bilm(3)
    layer = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)
    vocab = tmp_path / "vocab.txt"
    # CRLF and LF lines, a blank line, a repeat, no final newline.
    vocab.write_bytes("<S>\r\n</S>\n\nthe\nthe\nnaïve\r\nend".encode())
    path = tmp_path / "v.txt"
    export_word2vec(layer, path, vocab)
    tokens, vectors = parse_word2vec(path)
    assert tokens == ["<S>", "</S>", "the", "naïve", "end"]
    assert_layer0(tokens, vectors, sentence_word_emb(bilm, [tokens]))
    assert sorted(os.listdir(tmp_path)) == ["v.txt", "vocab.txt"]


def test_elmoformanylangs_word_lexicon_is_the_default(tmp_path):
    bilm = keras_elmo.BiLM.from_preset(efml_reference.folder("word"))
    config = bilm.config
    path = tmp_path / "efml.txt"
    export_word2vec(bilm, path)
    tokens, vectors = parse_word2vec(path)
    specials = set(config.word_specials)
    words = sorted(config.word_lexicon, key=lambda pair: pair[1])
    assert tokens == [w for w, i in words if i not in specials]
    assert len(tokens) == len(config.word_lexicon) - 4
    assert vectors.shape[1] == config.projection_dim
    # The word branch and the Unicode char-CNN, as in a sentence.
    expected = sentence_word_emb(bilm, [tokens[:6], tokens[6:]])
    assert_layer0(tokens, vectors, expected)
    # A token outside the lexicon: its char-CNN and the oov word row.
    export_word2vec(bilm, path, ["的", "zzz"])
    tokens, vectors = parse_word2vec(path)
    assert_layer0(tokens, vectors, sentence_word_emb(bilm, [["zzz", "的"]]))


def test_bad_vocabularies_are_refused_and_nothing_is_written(tmp_path):
    bilm = tiny_bilm(7)
    path = tmp_path / "v.txt"
    with pytest.raises(ValueError, match="has no word lexicon of its own"):
        export_word2vec(bilm, path)
    with pytest.raises(ValueError, match=r"'a b' \(index 1\)"):
        export_word2vec(bilm, path, ["ok", "a b", "fine"])
    with pytest.raises(
        ValueError, match="4 token.s. holding whitespace.*1 more"
    ):
        export_word2vec(bilm, path, ["a\tb", "c\u00a0d", "e\u2003", "f ", "g"])
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("the\nNew York\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"'New York' \(line 2\)"):
        export_word2vec(bilm, path, vocab)
    vocab.write_bytes(b"the\n\xff\n")
    with pytest.raises(ValueError, match="is not UTF-8 text"):
        export_word2vec(bilm, path, vocab)
    vocab.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="has no tokens"):
        export_word2vec(bilm, path, vocab)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        export_word2vec(bilm, path, tmp_path / "missing.txt")
    with pytest.raises(TypeError, match=r"`vocabulary\[1\]` must be a str"):
        export_word2vec(bilm, path, ["a", 3])
    with pytest.raises(TypeError, match="received bytes"):
        export_word2vec(bilm, path, b"the")
    with pytest.raises(
        ValueError, match="argument `batch_size`, expected a positive"
    ):
        export_word2vec(bilm, path, ["a"], batch_size=0)
    assert not path.exists()
    path.write_text("keep", encoding="utf-8")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        export_word2vec(bilm, path, ["a"], overwrite=False)
    assert path.read_text(encoding="utf-8") == "keep"
    assert sorted(os.listdir(tmp_path)) == ["v.txt", "vocab.txt"]


def test_cli_format_word2vec(reference_weights, tmp_path, capsys):
    options, weights = reference_weights("tiny")
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(options, model / "options.json")
    shutil.copy(weights, model / "weights.hdf5")
    args = ["export", "--model", str(model), "--format", "word2vec"]
    out = tmp_path / "vectors.txt"

    # No vocab.txt beside the weights and no --vocab: refused by flag.
    assert main(args + ["--out", str(out)]) == 2
    assert "pass --vocab FILE" in capsys.readouterr().err
    assert main(args + ["--out", str(out), "--quantize", "int8"]) == 2
    err = capsys.readouterr().err
    assert "--quantize does not apply to --format word2vec" in err
    assert not out.exists()

    # The model's own vocab.txt by default.
    (model / "vocab.txt").write_text(
        "<S>\n</S>\n<UNK>\nthe\ncat\nnaïve\n", encoding="utf-8"
    )
    assert main(args + ["--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"6 tokens of {model / 'vocab.txt'}, 16 values each" in printed
    tokens, vectors = parse_word2vec(out)
    assert tokens == ["<S>", "</S>", "<UNK>", "the", "cat", "naïve"]
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    assert_layer0(tokens, vectors, sentence_word_emb(bilm, [tokens]))

    # --vocab wins; an existing output needs --force.
    mine = tmp_path / "mine.txt"
    mine.write_text("sat\nmat\n", encoding="utf-8")
    with_vocab = args + ["--out", str(out), "--vocab", str(mine)]
    assert main(with_vocab) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert main(with_vocab + ["--force"]) == 0
    assert "2 tokens of" in capsys.readouterr().out
    assert parse_word2vec(out)[0] == ["sat", "mat"]
