"""In-graph TensorFlow ops: string tokens -> ELMo character ids."""

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
