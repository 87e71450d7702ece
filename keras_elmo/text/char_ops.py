"""In-graph TensorFlow ops: string tokens -> character ids and lexicon ids.

Pure TensorFlow (`tf.strings`, hash tables), so they run inside
`tf.function`, `tf.data` and an exported SavedModel with no Python:
`tokens_to_char_ids` gives ELMo's UTF-8 byte ids, the lexicon ops a
Unicode lexicon's ids (see `keras_elmo.text.char_vocab` for both
vocabularies and their specials).
"""

import tensorflow as tf

from keras_elmo.text import char_vocab


def tokens_to_char_ids(tokens):
    """Maps string tokens to shifted ELMo character ids, in graph.

    Pure TensorFlow (no Python at run time), so it runs inside `tf.data`,
    `tf.function` and an exported SavedModel. Bit-identical to
    `keras_elmo.batch_to_ids` for valid UTF-8 tokens: each token becomes
    `[BOW, bytes[:48], EOW, PAD, ...] + 1` and the empty string an all-zero
    row (padding), and the literal `<S>` / `</S>` their boundary ids.
    Tokens are taken as raw bytes; a Python `str` with lone surrogates
    cannot reach a `tf.string`, so the "ignore" rule of `batch_to_ids` has
    nothing to drop here.

    Args:
        tokens: string tensor of any shape `S`.

    Returns:
        int32 tensor of shape `S + [50]`.
    """
    with tf.name_scope("tokens_to_char_ids"):
        tokens = tf.convert_to_tensor(tokens, dtype=tf.string)
        width = char_vocab.MAX_CHARS_PER_TOKEN
        max_bytes = char_vocab.MAX_TOKEN_BYTES
        kept = tf.strings.substr(tokens, 0, max_bytes, unit="BYTE")
        num_bytes = tf.strings.length(kept, unit="BYTE")[..., tf.newaxis]
        raw = tf.io.decode_raw(kept, tf.uint8, fixed_length=max_bytes)
        raw = tf.cast(raw, tf.int32)
        # Slot k holds byte k-1 for 1 <= k <= n, EOW at n+1, PAD after.
        slots = tf.range(width, dtype=tf.int32)
        body = tf.pad(raw, [[0, 0]] * (raw.shape.rank - 1) + [[1, 1]])
        ids = tf.where(slots <= num_bytes, body, char_vocab.PAD_CHAR)
        ids = tf.where(slots == num_bytes + 1, char_vocab.EOW_CHAR, ids)
        ids = tf.where(slots == 0, char_vocab.BOW_CHAR, ids)
        ids = ids + char_vocab.ID_OFFSET
        for literal, boundary in (
            (char_vocab.BOS_TOKEN, char_vocab.BOS_TOKEN_IDS),
            (char_vocab.EOS_TOKEN, char_vocab.EOS_TOKEN_IDS),
        ):
            is_literal = tf.equal(tokens, literal)[..., tf.newaxis]
            ids = tf.where(is_literal, tf.constant(boundary), ids)
        is_token = tf.strings.length(tokens) > 0
        return tf.where(is_token[..., tf.newaxis], ids, 0)


def lexicon_table(pairs):
    """A `tf.lookup.StaticHashTable` token -> id (int32), default -1."""
    keys = tf.constant([token for token, _ in pairs], tf.string)
    values = tf.constant([i for _, i in pairs], tf.int32)
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(keys, values), default_value=-1
    )


def valid_utf8(tokens):
    """Tokens with invalid UTF-8 sequences replaced by U+FFFD, so every
    code point below is well defined (a Python `str` is always valid)."""
    return tf.strings.unicode_transcode(
        tokens, "UTF-8", "UTF-8", errors="replace"
    )


def truncate(tokens, width=char_vocab.MAX_CHARS_PER_TOKEN):
    """The first `width - 2` code points of each token (room for the
    begin- and end-of-word slots)."""
    return tf.strings.substr(tokens, 0, width - 2, unit="UTF8_CHAR")


def tokens_to_unicode_char_ids(
    tokens,
    table,
    specials,
    boundary_tokens=(None, None),
    width=char_vocab.MAX_CHARS_PER_TOKEN,
):
    """String tokens -> shifted lexicon char ids, `S + [width]` int32.

    Each non-empty token, cut to its first `width - 2` code points
    `c_1..c_n`, becomes

        [bow, id(c_1), ..., id(c_n), eow, pad, ...] + 1

    with `id(c) = oov` for a code point not in `table`; a token equal to
    `boundary_tokens[0]` (`[1]`), the lexicon's `bos` (`eos`) entry, is
    the boundary token `[bow, bos, eow, pad...] + 1`; `""` is padding, an
    all-zero row.

    Args:
        tokens: string tensor of shape `S` (valid UTF-8; invalid bytes
            become U+FFFD).
        table: `lexicon_table` of the character lexicon.
        specials: ids in `char_vocab.CHAR_SPECIALS` order.
        boundary_tokens: pair of str or None, the literal boundary tokens.
        width: int, slots per token.
    """
    s = char_vocab.specials_dict(specials, char_vocab.CHAR_SPECIALS)
    shift = char_vocab.ID_OFFSET
    with tf.name_scope("tokens_to_unicode_char_ids"):
        tokens = valid_utf8(tf.convert_to_tensor(tokens, dtype=tf.string))
        chars = tf.strings.unicode_split(truncate(tokens, width), "UTF-8")
        ids = tf.ragged.map_flat_values(table.lookup, chars)
        ids = tf.ragged.map_flat_values(
            lambda v: tf.where(v < 0, s["oov"], v) + shift, ids
        )
        shape = tf.concat([tf.shape(tokens), [width - 2]], axis=0)
        body = ids.to_tensor(default_value=s["pad"] + shift, shape=shape)
        rank = len(tokens.shape)
        body = tf.pad(
            body,
            [[0, 0]] * rank + [[1, 1]],
            constant_values=s["pad"] + shift,
        )
        count = tf.cast(chars.row_lengths(axis=rank), tf.int32)
        count = tf.reshape(count, tf.shape(tokens))[..., tf.newaxis]
        slots = tf.range(width, dtype=tf.int32)
        body = tf.where(slots == count + 1, s["eow"] + shift, body)
        body = tf.where(slots == 0, s["bow"] + shift, body)
        bos, eos = char_vocab.boundary_char_ids(specials, width)
        for literal, row in zip(boundary_tokens, (bos, eos)):
            if literal:
                is_literal = tf.equal(tokens, literal)[..., tf.newaxis]
                body = tf.where(is_literal, tf.constant(row), body)
        is_token = tf.strings.length(tokens) > 0
        return tf.where(is_token[..., tf.newaxis], body, 0)


def tokens_to_word_ids(
    tokens, table, specials, width=char_vocab.MAX_CHARS_PER_TOKEN
):
    """String tokens -> word ids (unshifted), shape `S` int32.

    A token is looked up cut to its first `width - 2` code points (as the
    characters are); a token not in `table` is `oov`, `""` is `pad`.
    """
    s = char_vocab.specials_dict(specials, char_vocab.WORD_SPECIALS)
    with tf.name_scope("tokens_to_word_ids"):
        tokens = valid_utf8(tf.convert_to_tensor(tokens, dtype=tf.string))
        ids = table.lookup(truncate(tokens, width))
        ids = tf.where(ids < 0, s["oov"], ids)
        return tf.where(tf.strings.length(tokens) > 0, ids, s["pad"])
