"""Properties of the character mapping and of tokenization (hypothesis).

`tests/text/batch_to_ids_test.py` already checks `batch_to_ids` against a
row re-derivation and `tokens_to_char_ids` on valid UTF-8 strings. These
add: arbitrary BYTES (invalid UTF-8 included) through the in-graph op and
the `CharacterIds` layer, the structural invariants of every row, the
byte-level 48-byte cut (mid-character, as AllenNLP's
`word.encode("utf-8", "ignore")[:48]`), and the SavedModel's in-graph
whitespace tokenizer against `str.split()`.
"""

import numpy as np
import tensorflow as tf
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import keras_elmo
from keras_elmo.export.elmo_module import split_sentences
from keras_elmo.layers import CharacterIds
from keras_elmo.text.char_vocab import tokens_to_char_ids
from tests.robustness.text_inputs import reference_row

BOW, EOW, PAD = 259, 260, 261
SETTINGS = settings(max_examples=60, deadline=None)

# Tokens as raw bytes: short, long (often cut mid-character), and UTF-8
# text with multi-byte characters.
byte_tokens = st.one_of(
    st.binary(max_size=12),
    st.binary(min_size=45, max_size=70),
    st.text(min_size=10, max_size=40).map(
        lambda t: t.encode("utf-8", "surrogatepass")
    ),
).filter(lambda b: b not in (b"<S>", b"</S>"))  # boundary literals
byte_sentences = st.lists(
    st.lists(byte_tokens, max_size=5), min_size=1, max_size=4
)
# Text without lone surrogates (a tf.string holds UTF-8 bytes).
unicode_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40
)
# Text rich in whitespace of every kind.
spacey_text = st.lists(
    st.one_of(
        st.sampled_from(
            [" ", "\t", "\n", "\x0b", "\x1c", "\x85", "\xa0", "\u1680"]
            + ["\u2007", "\u2028", "\u202f", "\u205f", "\u3000", "\u200b"]
        ),
        unicode_text,
    ),
    max_size=12,
).map("".join)


def padded_bytes(sentences):
    """`[B, T]` NumPy array of bytes tokens padded with b"" (raw bytes: any
    value, valid UTF-8 or not)."""
    steps = max(len(s) for s in sentences)
    array = np.full((len(sentences), steps), b"", dtype=object)
    for i, sentence in enumerate(sentences):
        array[i, : len(sentence)] = sentence
    return array


def check_row(row, token):
    """The structural invariants of one 50-id row of `token` (bytes)."""
    assert row.shape == (50,)
    if not token:
        assert not row.any()
        return
    kept = token[:48]  # a byte cut, even inside a character
    assert row[0] == BOW
    assert row[1 : len(kept) + 1].tolist() == [b + 1 for b in kept]
    assert row[len(kept) + 1] == EOW
    assert (row[len(kept) + 2 :] == PAD).all()
    assert ((row >= 1) & (row <= 261)).all()
    assert (row == EOW).sum() == 1 and (row == BOW).sum() == 1


@SETTINGS
@given(sentences=byte_sentences)
def test_in_graph_op_on_arbitrary_bytes(sentences):
    tokens = padded_bytes(sentences)
    ids = tokens_to_char_ids(tf.constant(tokens, tf.string)).numpy()
    assert ids.shape == tokens.shape + (50,) and ids.dtype == np.int32
    for index, token in np.ndenumerate(tokens):
        check_row(ids[index], token)
        np.testing.assert_array_equal(ids[index], reference_row(token))


@SETTINGS
@given(sentences=byte_sentences)
def test_character_ids_layer_equals_the_op(sentences):
    tokens = tf.constant(padded_bytes(sentences), tf.string)
    np.testing.assert_array_equal(
        CharacterIds()(tokens), tokens_to_char_ids(tokens)
    )


@SETTINGS
@given(tokens=st.lists(unicode_text, min_size=1, max_size=6))
def test_layer_equals_batch_to_ids_on_unicode(tokens):
    ids = CharacterIds()(tf.constant([[t.encode("utf-8") for t in tokens]]))
    np.testing.assert_array_equal(ids, keras_elmo.batch_to_ids([tokens]))


@SETTINGS
@given(text=st.text(min_size=17, max_size=40))
def test_cut_is_byte_level_as_allennlp(text):
    """The first 48 UTF-8 bytes are kept even when the 48th byte is inside
    a character (no back-off to a character boundary)."""
    data = text.encode("utf-8", "ignore")
    row = keras_elmo.batch_to_ids([[text]])[0, 0]
    if not text:
        return
    kept = data[:48]
    assert bytes(int(i) - 1 for i in row[1 : len(kept) + 1]) == kept
    check_row(row, data)


@SETTINGS
@given(texts=st.lists(spacey_text, min_size=1, max_size=4))
def test_in_graph_split_equals_str_split(texts):
    tokens, lengths = split_sentences(
        tf.constant([t.encode("utf-8") for t in texts]), max_tokens=7
    )
    for row, text in enumerate(texts):
        expected = [w.encode("utf-8") for w in text.split()][:7]
        assert lengths[row] == len(expected)
        assert tokens[row, : len(expected)].numpy().tolist() == expected
        assert not any(tokens[row, len(expected) :].numpy())


@SETTINGS
@given(lines=st.lists(st.binary(max_size=30), min_size=1, max_size=4))
def test_in_graph_split_equals_embed_on_raw_bytes(lines):
    """Raw bytes (invalid UTF-8 too) split as `keras-elmo embed` does:
    `line.decode(errors="surrogateescape").split()`, bytes kept."""
    lines = [line.replace(b"\n", b" ") for line in lines]
    tokens, lengths = split_sentences(tf.constant(lines), max_tokens=64)
    for row, line in enumerate(lines):
        text = line.decode("utf-8", "surrogateescape")
        expected = [w.encode("utf-8", "surrogateescape") for w in text.split()]
        got = tokens[row, : lengths[row]].numpy().tolist()
        assert got == expected, (line, got, expected)
