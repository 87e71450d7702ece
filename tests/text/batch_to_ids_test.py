import json
import os

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import keras_elmo
from keras_elmo.testing import TestCase
from keras_elmo.text import char_vocab
from keras_elmo.text.char_vocab import batch_to_ids
from keras_elmo.text.char_vocab import tokens_to_char_ids

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")

BOW, EOW, PAD = 259, 260, 261  # shifted ids


def expected_row(token):
    """Independent re-derivation of one token's 50 shifted ids."""
    if token == "":
        return np.zeros(50, "int32")
    if token == "<S>":
        return np.array([BOW, 257, EOW] + [PAD] * 47, "int32")
    if token == "</S>":
        return np.array([BOW, 258, EOW] + [PAD] * 47, "int32")
    data = list(token.encode("utf-8", "ignore")[:48])
    row = [BOW] + [b + 1 for b in data] + [EOW]
    return np.array(row + [PAD] * (50 - len(row)), "int32")


def padded_tokens(sentences):
    """`[B, T]` UTF-8 bytes array padded with b"" (surrogates dropped)."""
    width = max((len(s) for s in sentences), default=0)
    tokens = np.full((len(sentences), width), b"", dtype=object)
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            tokens[i, j] = token.encode("utf-8", "ignore")
    return tokens


def is_surrogate(c):
    return 0xD800 <= ord(c) <= 0xDFFF


# Lone surrogates are rare in `st.characters`; mix them in on purpose.
with_surrogates = st.text(
    alphabet=st.one_of(
        st.characters(categories=["Cs"]),
        st.characters(),
    )
)
# Long tokens, so the 48-byte cut often splits a multi-byte character.
long_tokens = st.text(min_size=20, max_size=60).filter(
    lambda t: len(t.encode("utf-8")) > 48
)
any_token = st.one_of(with_surrogates, long_tokens)
sentences_strategy = st.lists(
    st.lists(st.one_of(st.text(), long_tokens), max_size=5), max_size=4
)


class BatchToIdsTest(TestCase):
    def test_hello_known_ids(self):
        ids = batch_to_ids([["Hello"]])
        self.assertEqual(ids.dtype, np.int32)
        self.assertEqual(ids.shape, (1, 1, 50))
        # H=72, e=101, l=108, o=111, all shifted by +1.
        self.assertEqual(
            ids[0, 0].tolist(),
            [259, 73, 102, 109, 109, 112, 260] + [261] * 43,
        )

    def test_public_alias(self):
        self.assertIs(keras_elmo.batch_to_ids, batch_to_ids)

    def test_docstring_example(self):
        ids = batch_to_ids([["Hello", "!"], ["Hi"]])
        self.assertEqual(ids.shape, (2, 2, 50))
        self.assertEqual(ids[0, 1, :4].tolist(), [259, 34, 260, 261])
        self.assertEqual(ids[1, 0, :5].tolist(), [259, 73, 106, 260, 261])
        self.assertEqual(ids[1, 1].tolist(), [0] * 50)

    def test_long_tokens_truncated_to_48_bytes(self):
        for length in (47, 48, 49, 63, 200):
            token = "x" * length
            row = batch_to_ids([[token]])[0, 0]
            kept = min(length, 48)
            self.assertEqual(row[0], BOW)
            self.assertEqual(row[1 : kept + 1].tolist(), [ord("x") + 1] * kept)
            self.assertEqual(row[kept + 1], EOW, msg=f"length {length}")
            self.assertEqual(row[kept + 2 :].tolist(), [PAD] * (48 - kept))
        # 47 bytes leave one PAD; from 48 bytes on EOW sits in the last slot.
        self.assertEqual(
            batch_to_ids([["x" * 47]])[0, 0, 48:].tolist(), [260, 261]
        )
        for length in (48, 49, 63):
            self.assertEqual(batch_to_ids([["x" * length]])[0, 0, 49], EOW)
        self.assertAllEqual(
            batch_to_ids([["x" * 48]]), batch_to_ids([["x" * 63]])
        )

    def test_truncation_splits_a_multibyte_character(self):
        # "a" + 31 * "é" is 63 bytes; byte 48 is the lead byte 0xC3 of the
        # 24th "é", whose continuation byte 0xA9 is cut off.
        token = "a" + "\u00e9" * 31
        row = batch_to_ids([[token]])[0, 0]
        expected = [BOW, ord("a") + 1] + [0xC3 + 1, 0xA9 + 1] * 23
        expected += [0xC3 + 1, EOW]
        self.assertEqual(row.tolist(), expected)
        # A 4-byte emoji cut after its third byte.
        token = "a" + "\U0001f389" * 12  # 49 bytes
        row = batch_to_ids([[token]])[0, 0]
        emoji = [b + 1 for b in "\U0001f389".encode("utf-8")]
        self.assertEqual(row[1:49].tolist(), [98] + emoji * 11 + emoji[:3])
        self.assertEqual(row[49], EOW)

    def test_empty_token_is_all_zero_row(self):
        ids = batch_to_ids([["", "x", ""]])
        self.assertEqual(ids.shape, (1, 3, 50))
        self.assertEqual(ids[0, 0].tolist(), [0] * 50)
        self.assertEqual(ids[0, 1, :3].tolist(), [BOW, ord("x") + 1, EOW])
        self.assertEqual(ids[0, 2].tolist(), [0] * 50)

    def test_empty_batch(self):
        ids = batch_to_ids([])
        self.assertEqual(ids.shape, (0, 0, 50))
        self.assertEqual(ids.dtype, np.int32)
        self.assertEqual(batch_to_ids([[], []]).shape, (2, 0, 50))

    def test_empty_sentence_row(self):
        ids = batch_to_ids([["a", "b"], [], ["c"]])
        self.assertEqual(ids.shape, (3, 2, 50))
        self.assertAllEqual(ids[1], np.zeros((2, 50), "int32"))
        self.assertEqual(ids[2, 0, :3].tolist(), [BOW, ord("c") + 1, EOW])
        self.assertAllEqual(ids[2, 1], np.zeros(50, "int32"))

    def test_ragged_lengths_right_padded_with_zeros(self):
        sentences = [["a"], ["one", "two", "three", "four"], ["b", "c"]]
        ids = batch_to_ids(sentences)
        self.assertEqual(ids.shape, (3, 4, 50))
        for i, sentence in enumerate(sentences):
            for j in range(4):
                token = sentence[j] if j < len(sentence) else ""
                self.assertEqual(
                    ids[i, j].tolist(), expected_row(token).tolist()
                )
        real = (ids > 0).any(-1)
        self.assertEqual(real.sum(1).tolist(), [1, 4, 2])

    def test_lone_surrogate_dropped(self):
        ids = batch_to_ids([["a\ud800b", "ab", "\udfff"]])
        self.assertAllEqual(ids[0, 0], ids[0, 1])
        # A token of only a lone surrogate is a real zero-byte word.
        self.assertEqual(ids[0, 2].tolist(), [BOW, EOW] + [PAD] * 48)

    def test_nul_byte_is_id_one(self):
        row = batch_to_ids([["a\x00b"]])[0, 0]
        self.assertEqual(row[:5].tolist(), [BOW, 98, 1, 99, EOW])

    def test_literal_boundary_tokens(self):
        ids = batch_to_ids([["<S>", "hi", "</S>"]])
        self.assertAllEqual(ids[0, 0], char_vocab.BOS_TOKEN_IDS)
        self.assertAllEqual(ids[0, 2], char_vocab.EOS_TOKEN_IDS)
        self.assertEqual(ids[0, 0, :4].tolist(), [259, 257, 260, 261])
        self.assertEqual(ids[0, 2, :4].tolist(), [259, 258, 260, 261])

    def test_accepts_tuples(self):
        self.assertAllEqual(
            batch_to_ids((("a", "b"), ("c",))),
            batch_to_ids([["a", "b"], ["c"]]),
        )

    def test_type_errors_name_the_argument_path(self):
        with pytest.raises(TypeError, match=r"`sentences` must be"):
            batch_to_ids("a sentence")
        with pytest.raises(TypeError, match=r"`sentences` must be"):
            batch_to_ids(None)
        with pytest.raises(TypeError, match=r"`sentences\[1\]` must be"):
            batch_to_ids([["a"], "bc"])
        with pytest.raises(
            TypeError, match=r"`sentences\[1\]\[0\]` must be a str.*int"
        ):
            batch_to_ids([["a"], [3]])
        with pytest.raises(
            TypeError, match=r"`sentences\[0\]\[2\]` must be a str.*bytes"
        ):
            batch_to_ids([["a", "b", b"c"]])

    def test_matches_allennlp_fixture(self):
        data = np.load(
            os.path.join(FIXTURES, "batch_to_ids.npz"), allow_pickle=False
        )
        # Cases 2, 5, 6 are documented differences ("" is padding here;
        # an empty batch keeps its 50 axis).
        for case in (0, 1, 3, 4):
            sentences = json.loads(str(data[f"case_{case}_sentences_json"]))
            self.assertAllEqual(
                batch_to_ids(sentences),
                data[f"case_{case}_ids"],
                msg=f"case {case}",
            )
        self.assertEqual(data["case_0_ids"].shape, (14, 40, 50))
        sentences = json.loads(str(data["case_2_sentences_json"]))
        ids = batch_to_ids(sentences)
        self.assertAllEqual(ids[0, 1], data["case_2_ids"][0, 1])
        self.assertAllEqual(ids[0, 0], np.zeros(50, "int32"))

    @settings(max_examples=200, deadline=None)
    @given(token=any_token)
    @example(token="\ud800")  # only a surrogate: a token with no bytes
    @example(token="a\udfffb")
    def test_property_single_token(self, token):
        row = batch_to_ids([[token]])[0, 0]
        self.assertEqual(row.shape, (50,))
        if token == "":
            self.assertTrue((row == 0).all())
            return
        self.assertEqual(row.tolist(), expected_row(token).tolist())
        self.assertTrue(((row >= 1) & (row <= 261)).all())
        self.assertEqual(row[0], BOW)
        if token not in ("<S>", "</S>"):
            data = token.encode("utf-8", "ignore")
            n = min(48, len(data))
            self.assertEqual(row[1 : n + 1].tolist(), [b + 1 for b in data[:n]])
            self.assertEqual(row[n + 1], EOW)
            self.assertTrue((row[n + 2 :] == PAD).all())
            # Surrogates never reach the bytes.
            clean = "".join(c for c in token if not is_surrogate(c))
            if clean:
                self.assertEqual(row.tolist(), expected_row(clean).tolist())
            else:  # still a token (not padding), with no bytes
                self.assertEqual(row.tolist(), [BOW, EOW] + [PAD] * 48)

    @pytest.mark.large
    @settings(max_examples=200, deadline=None)
    @given(sentences=sentences_strategy)
    def test_property_batch_matches_in_graph_op(self, sentences):
        ids = batch_to_ids(sentences)
        width = max((len(s) for s in sentences), default=0)
        self.assertEqual(ids.shape, (len(sentences), width, 50))
        self.assertEqual(ids.dtype, np.int32)
        for i, sentence in enumerate(sentences):
            for j in range(width):
                token = sentence[j] if j < len(sentence) else ""
                self.assertEqual(
                    ids[i, j].tolist(), expected_row(token).tolist()
                )
        tokens = tf.constant(padded_tokens(sentences), dtype=tf.string)
        in_graph = tokens_to_char_ids(tokens)
        self.assertEqual(in_graph.dtype, tf.int32)
        self.assertAllEqual(in_graph, ids)

    @settings(max_examples=200, deadline=None)
    @given(tokens=st.lists(any_token, min_size=1, max_size=6))
    def test_property_in_graph_op_ignores_surrogates_like_numpy(self, tokens):
        # Python strings with lone surrogates cannot become tf.string; the
        # in-graph op sees the UTF-8 bytes with them removed, and agrees.
        clean = ["".join(c for c in t if not is_surrogate(c)) for t in tokens]
        ids = batch_to_ids([clean])
        encoded = [t.encode("utf-8") for t in clean]
        self.assertAllEqual(tokens_to_char_ids(tf.constant([encoded])), ids)
        # On the raw tokens, surrogates are dropped after the "" check: a
        # token of only surrogates is a zero-byte word, not padding.
        rows = batch_to_ids([tokens])[0]
        for token, row in zip(tokens, rows):
            self.assertEqual(row.tolist(), expected_row(token).tolist())
            if token and not token.encode("utf-8", "ignore"):
                self.assertEqual(row[:3].tolist(), [BOW, EOW, PAD])
