"""The character vocabularies, ELMo's UTF-8 byte ids and Unicode lexicons,
in NumPy and as in-graph TensorFlow ops.

ELMo's, identical to AllenNLP and bilm-tf. Raw ids are the UTF-8 bytes
0..255 of a token plus five specials; every id
is then shifted by +1 so that id 0 is free to mean "no token" (padding).
A token occupies `MAX_CHARS_PER_TOKEN` = 50 slots:
`[BOW, byte_0, ..., byte_47, EOW, PAD, ...]` (at most 48 bytes are kept; the
cut is byte-level and may split a multi-byte character, as in AllenNLP).
`batch_to_ids` applies it to tokenized sentences (NumPy).

Unicode lexicons. The bilm-tf format has no lexicon: a character is a UTF-8
byte (`char_vocab`). ELMoForManyLangs models (and any model with a learned
character or word table) map each *code point* (and each word) to a row of
their own table. A lexicon here is a tuple of `(token, id)` pairs (the table's
keys, as the model's files list them) and a tuple of special ids:

- characters, `CHAR_SPECIALS`: `bow` (slot 0 of every token), `eow`
  (after its last character), `oov` (a character not in the lexicon),
  `pad` (the slots after `eow`), `bos` / `eos` (the one character of the
  sentence boundary tokens);
- words, `WORD_SPECIALS`: `oov`, `pad`, `bos` / `eos` (the ids of the
  boundary words).

Ids are the table's rows `0..n-1`. In the character ids a `BiLM` takes,
every id is shifted by +1 (`ID_OFFSET`, as for bytes) so that an all-zero
row still means "no token"; word ids are not shifted (the token mask comes
from the characters).

In-graph ops. Pure TensorFlow (`tf.strings`, hash tables), so they run inside
`tf.function`, `tf.data` and an exported SavedModel with no Python:
`tokens_to_char_ids` gives ELMo's UTF-8 byte ids, the lexicon ops a
Unicode lexicon's ids (the same vocabularies and specials as above).
"""

from collections.abc import Mapping
from collections.abc import Set

import numpy as np
import tensorflow as tf

from keras_elmo.api_export import keras_elmo_export

MAX_CHARS_PER_TOKEN = 50
MAX_TOKEN_BYTES = MAX_CHARS_PER_TOKEN - 2  # room for BOW and EOW

# Raw ids (before the +1 shift), as in bilm-tf's UnicodeCharsVocabulary.
BOS_CHAR = 256  # beginning of sentence
EOS_CHAR = 257  # end of sentence
BOW_CHAR = 258  # beginning of word
EOW_CHAR = 259  # end of word
PAD_CHAR = 260  # padding inside a token's 50 slots

# The +1 shift: id 0 marks a padding token (an all-zero row).
ID_OFFSET = 1

# Rows of the character embedding: 261 shifted ids plus the padding row 0.
NUM_CHARACTERS = PAD_CHAR + ID_OFFSET + 1  # 262
# Inference option files say 262, training option files (no +1) say 261.
ACCEPTED_N_CHARACTERS = (NUM_CHARACTERS - 1, NUM_CHARACTERS)


# The literal sentence boundary tokens (bilm-tf vocabulary spelling).
BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _boundary_token(char):
    ids = np.full([MAX_CHARS_PER_TOKEN], PAD_CHAR, dtype=np.int32)
    ids[0], ids[1], ids[2] = BOW_CHAR, char, EOW_CHAR
    return ids + ID_OFFSET


# Shifted char ids of the sentence boundary tokens `<S>` and `</S>`.
BOS_TOKEN_IDS = _boundary_token(BOS_CHAR)
EOS_TOKEN_IDS = _boundary_token(EOS_CHAR)


def token_to_char_ids(token):
    """Shifted character ids `[50]` int32 of one token (see `char_vocab`).

    The token is encoded as UTF-8 with invalid code points (lone
    surrogates) dropped, as AllenNLP's `token.encode("utf-8", "ignore")`;
    the first 48 bytes are kept. The literal tokens `<S>` and `</S>` map
    to the sentence boundary ids, as in AllenNLP and bilm-tf.
    """
    if token == BOS_TOKEN:
        return BOS_TOKEN_IDS.copy()
    if token == EOS_TOKEN:
        return EOS_TOKEN_IDS.copy()
    data = token.encode("utf-8", "ignore")[:MAX_TOKEN_BYTES]
    ids = np.full([MAX_CHARS_PER_TOKEN], PAD_CHAR, dtype=np.int32)
    ids[0] = BOW_CHAR
    ids[1 : len(data) + 1] = np.frombuffer(data, dtype=np.uint8)
    ids[len(data) + 1] = EOW_CHAR
    return ids + ID_OFFSET


@keras_elmo_export("keras_elmo.batch_to_ids")
def batch_to_ids(sentences):
    """Converts tokenized sentences to ELMo character ids.

    Identical to AllenNLP's `allennlp.modules.elmo.batch_to_ids` (and to
    bilm-tf's `Batcher` followed by its +1 shift): each token becomes
    `[BOW, bytes[:48], EOW, PAD, ...] + 1`, 50 ids long; positions after a
    sentence's last token are all-zero rows. The literal tokens `<S>` and
    `</S>` get the sentence boundary ids, as in AllenNLP. One deliberate
    difference: the empty string `""` gives an all-zero row, so it reads as
    padding (as in the TF-Hub `tokens` signature); AllenNLP would encode it
    as a zero-byte word `[BOW, EOW, PAD, ...]`.

    Args:
        sentences: list of lists of str. The tokenized sentences (a dict
            or set is not a batch: its order is not the caller's).

    Returns:
        int32 array `[B, T, 50]`, `T` the longest sentence (0 for an empty
        batch or a batch of empty sentences).

    Example:

    >>> ids = keras_elmo.batch_to_ids([["Hello", "!"], ["Hi"]])
    >>> ids.shape
    (2, 2, 50)
    >>> ids[0, 0, :8].tolist()
    [259, 73, 102, 109, 109, 112, 260, 261]
    """
    if isinstance(sentences, (str, bytes, Mapping, Set)) or not hasattr(
        sentences, "__len__"
    ):
        raise TypeError(
            "`sentences` must be a list of lists of str tokens, "
            f"received {type(sentences).__name__}: {sentences!r:.80}"
        )
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes, Mapping, Set)) or not hasattr(
            sentence, "__len__"
        ):
            raise TypeError(
                f"`sentences[{i}]` must be a list of str tokens, received "
                f"{type(sentence).__name__}: {sentence!r:.80}"
            )
        for j, token in enumerate(sentence):
            if not isinstance(token, str):
                raise TypeError(
                    f"`sentences[{i}][{j}]` must be a str token, received "
                    f"{type(token).__name__}: {token!r:.80}"
                )
    max_len = max((len(s) for s in sentences), default=0)
    ids = np.zeros(
        [len(sentences), max_len, MAX_CHARS_PER_TOKEN],
        dtype=np.int32,
    )
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            if token:
                ids[i, j] = token_to_char_ids(token)
    return ids


CHAR_SPECIALS = ("bow", "eow", "oov", "pad", "bos", "eos")
WORD_SPECIALS = ("oov", "pad", "bos", "eos")


def check_lexicon(argument, pairs, specials, names, rows=None):
    """Validates a lexicon; returns `(pairs, specials)` as tuples.

    Args:
        argument: str, how messages name the lexicon (`char_lexicon`).
        pairs: iterable of `(token, id)`; tokens non-empty str, ids ints
            in `[0, rows)`.
        specials: sequence of ints in the order of `names`, or a dict
            keyed by them.
        names: `CHAR_SPECIALS` or `WORD_SPECIALS`.
        rows: int or None, the table's rows (default: max id + 1).

    Raises:
        ValueError: naming `argument`, what was expected and received.
    """
    checked = []
    for pair in pairs:
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not pair[0]
            or isinstance(pair[1], bool)
            or not isinstance(pair[1], (int, np.integer))
        ):
            raise ValueError(
                f"Received an invalid value for argument `{argument}`, "
                "expected (token, id) pairs with a non-empty str token and "
                f"an int id, got {pair!r:.80}."
            )
        checked.append((pair[0], int(pair[1])))
    if not checked:
        raise ValueError(f"`{argument}` must not be empty.")
    tokens = [token for token, _ in checked]
    if len(set(tokens)) != len(tokens):
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: a token "
            "appears twice."
        )
    if isinstance(specials, dict):
        missing = [n for n in names if n not in specials]
        if missing:
            raise ValueError(
                f"`{argument}` specials lack {missing}; expected ids for "
                f"{list(names)}, got {sorted(specials)}."
            )
        specials = [specials[n] for n in names]
    specials = tuple(int(s) for s in specials)
    if len(specials) != len(names):
        raise ValueError(
            f"`{argument}` specials must be {len(names)} ids "
            f"({', '.join(names)}), got {specials}."
        )
    ids = [i for _, i in checked] + list(specials)
    rows = max(ids) + 1 if rows is None else int(rows)
    if min(ids) < 0 or max(ids) >= rows:
        raise ValueError(
            f"Received an invalid value for argument `{argument}`: ids must "
            f"be in [0, {rows}) (the table's rows), got ids in "
            f"[{min(ids)}, {max(ids)}]."
        )
    return tuple(checked), specials


def specials_dict(specials, names):
    """`{name: id}` of a specials tuple."""
    return dict(zip(names, (int(s) for s in specials)))


def check_pad_unshared(argument, pairs, pad_id):
    """The padding character must be no character's id: the char-CNN
    counts a token's characters as its non-padding slots."""
    shared = [token for token, i in pairs if i == pad_id and len(token) == 1]
    if shared:
        raise ValueError(
            f"`{argument}`: the padding id {pad_id} is also the id of "
            f"{shared[:3]}; a character may not share it."
        )


def boundary_char_ids(specials, width=MAX_CHARS_PER_TOKEN):
    """Shifted char ids `[width]` of the sentence boundary tokens.

    `[bow, bos, eow, pad, ...] + 1` and the same with `eos`, as a token
    whose one character is the lexicon's `bos` / `eos` entry.
    """
    s = specials_dict(specials, CHAR_SPECIALS)
    rows = []
    for boundary in ("bos", "eos"):
        ids = np.full([width], s["pad"], dtype=np.int32)
        ids[0], ids[1], ids[2] = s["bow"], s[boundary], s["eow"]
        rows.append(ids + ID_OFFSET)
    return rows[0], rows[1]


def lexicon_token(pairs, token_id):
    """The token of `pairs` with id `token_id` (the last one), or None."""
    found = None
    for token, i in pairs:
        if i == token_id:
            found = token
    return found


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
        width = MAX_CHARS_PER_TOKEN
        max_bytes = MAX_TOKEN_BYTES
        kept = tf.strings.substr(tokens, 0, max_bytes, unit="BYTE")
        num_bytes = tf.strings.length(kept, unit="BYTE")[..., tf.newaxis]
        raw = tf.io.decode_raw(kept, tf.uint8, fixed_length=max_bytes)
        raw = tf.cast(raw, tf.int32)
        # Slot k holds byte k-1 for 1 <= k <= n, EOW at n+1, PAD after.
        slots = tf.range(width, dtype=tf.int32)
        body = tf.pad(raw, [[0, 0]] * (raw.shape.rank - 1) + [[1, 1]])
        ids = tf.where(slots <= num_bytes, body, PAD_CHAR)
        ids = tf.where(slots == num_bytes + 1, EOW_CHAR, ids)
        ids = tf.where(slots == 0, BOW_CHAR, ids)
        ids = ids + ID_OFFSET
        for literal, boundary in (
            (BOS_TOKEN, BOS_TOKEN_IDS),
            (EOS_TOKEN, EOS_TOKEN_IDS),
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


def truncate(tokens, width=MAX_CHARS_PER_TOKEN):
    """The first `width - 2` code points of each token (room for the
    begin- and end-of-word slots)."""
    return tf.strings.substr(tokens, 0, width - 2, unit="UTF8_CHAR")


def tokens_to_unicode_char_ids(
    tokens,
    table,
    specials,
    boundary_tokens=(None, None),
    width=MAX_CHARS_PER_TOKEN,
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
        specials: ids in `CHAR_SPECIALS` order.
        boundary_tokens: pair of str or None, the literal boundary tokens.
        width: int, slots per token.
    """
    s = specials_dict(specials, CHAR_SPECIALS)
    shift = ID_OFFSET
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
        bos, eos = boundary_char_ids(specials, width)
        for literal, row in zip(boundary_tokens, (bos, eos)):
            if literal:
                is_literal = tf.equal(tokens, literal)[..., tf.newaxis]
                body = tf.where(is_literal, tf.constant(row), body)
        is_token = tf.strings.length(tokens) > 0
        return tf.where(is_token[..., tf.newaxis], body, 0)


def tokens_to_word_ids(tokens, table, specials, width=MAX_CHARS_PER_TOKEN):
    """String tokens -> word ids (unshifted), shape `S` int32.

    A token is looked up cut to its first `width - 2` code points (as the
    characters are); a token not in `table` is `oov`, `""` is `pad`.
    """
    s = specials_dict(specials, WORD_SPECIALS)
    with tf.name_scope("tokens_to_word_ids"):
        tokens = valid_utf8(tf.convert_to_tensor(tokens, dtype=tf.string))
        ids = table.lookup(truncate(tokens, width))
        ids = tf.where(ids < 0, s["oov"], ids)
        return tf.where(tf.strings.length(tokens) > 0, ids, s["pad"])
