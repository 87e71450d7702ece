"""The character vocabularies: ELMo's UTF-8 byte ids and Unicode lexicons.

ELMo's, identical to AllenNLP and bilm-tf. Raw ids are the UTF-8 bytes
0..255 of a token plus five specials; every id
is then shifted by +1 so that id 0 is free to mean "no token" (padding).
A token occupies `MAX_CHARS_PER_TOKEN` = 50 slots:
`[BOW, byte_0, ..., byte_47, EOW, PAD, ...]` (at most 48 bytes are kept; the
cut is byte-level and may split a multi-byte character, as in AllenNLP).
`batch_to_ids` applies it to tokenized sentences (NumPy).

Unicode lexicons. The bilm-tf format has no lexicon: a character is a UTF-8 byte
(`char_vocab`). ELMoForManyLangs models (and any model with a learned
character or word table) map each *code point* (and each word) to a row
of their own table. A lexicon here is a tuple of `(token, id)` pairs (the
table's keys, as the model's files list them) and a tuple of special ids:

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
"""

from collections.abc import Mapping
from collections.abc import Set

import numpy as np

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
