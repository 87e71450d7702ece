"""Unicode token lexicons: a model's own character and word ids.

The bilm-tf format has no lexicon: a character is a UTF-8 byte
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

import numpy as np

from keras_elmo.text import char_vocab

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


def boundary_char_ids(specials, width=char_vocab.MAX_CHARS_PER_TOKEN):
    """Shifted char ids `[width]` of the sentence boundary tokens.

    `[bow, bos, eow, pad, ...] + 1` and the same with `eos`, as a token
    whose one character is the lexicon's `bos` / `eos` entry.
    """
    s = specials_dict(specials, CHAR_SPECIALS)
    rows = []
    for boundary in ("bos", "eos"):
        ids = np.full([width], s["pad"], dtype=np.int32)
        ids[0], ids[1], ids[2] = s["bow"], s[boundary], s["eow"]
        rows.append(ids + char_vocab.ID_OFFSET)
    return rows[0], rows[1]


def lexicon_token(pairs, token_id):
    """The token of `pairs` with id `token_id` (the last one), or None."""
    found = None
    for token, i in pairs:
        if i == token_id:
            found = token
    return found
