"""`Vocabulary`: the word vocabulary of the biLM softmax (bilm-tf format).

The file has one token per line, most frequent first; the first three lines
are exactly `<S>`, `</S>` and `<UNK>` (ids 0, 1 and 2). It is the file
bilm-tf's `train_elmo.py` reads with `--vocab_file`.
"""

import logging
import os

from keras_elmo.data import corpus
from keras_elmo.utils import check_positive_int
from keras_elmo.utils.atomic import atomic_write

logger = logging.getLogger(__name__)

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"
UNK_TOKEN = "<UNK>"
SPECIAL_TOKENS = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)

# Token separators of `tf.strings.split` (and `bytes.split`): ASCII only.
_ASCII_WHITESPACE = " \t\n\r\x0b\x0c"


def _token_problem(token):
    """Why `token` cannot be a vocabulary entry, or None if it can."""
    if not isinstance(token, str):
        return f"must be a str, received {type(token).__name__}"
    if not token:
        return "is empty"
    if any(c in _ASCII_WHITESPACE for c in token):
        return "contains whitespace (tokens are whitespace-separated)"
    return None


class Vocabulary:
    """Word vocabulary of the biLM: token <-> id, bilm-tf file format.

    Ids are line numbers from 0: `<S>` = 0, `</S>` = 1, `<UNK>` = 2, then
    corpus tokens, most frequent first. Unknown tokens map to `<UNK>`.
    Tokens are compared as exact UTF-8 strings (no lower-casing or
    normalisation) and may not contain ASCII whitespace, the separator
    the data pipeline splits on.

    Args:
        tokens: iterable of str. All tokens in id order, starting with
            `<S>`, `</S>`, `<UNK>`.

    Raises:
        ValueError: the first three tokens are not the specials, or a token
            is empty, contains whitespace or repeats (the error names the
            token and its line, counting from 1).

    Example:

    >>> vocab = keras_elmo.data.Vocabulary(["<S>", "</S>", "<UNK>", "the"])
    >>> vocab.token_to_id("the"), vocab.token_to_id("zebra")
    (3, 2)
    """

    def __init__(self, tokens):
        tokens = list(tokens)
        if tuple(tokens[:3]) != SPECIAL_TOKENS:
            raise ValueError(
                "Received an invalid value for argument `tokens`: the first "
                f"three must be {list(SPECIAL_TOKENS)}, got {tokens[:3]!r}."
            )
        index = {}
        for i, token in enumerate(tokens):
            problem = _token_problem(token)
            if problem:
                raise ValueError(
                    f"Vocabulary token {token!r} at line {i + 1} (id {i}) "
                    f"{problem}."
                )
            if token in index:
                raise ValueError(
                    f"Vocabulary token {token!r} at line {i + 1} (id {i}) "
                    f"repeats line {index[token] + 1}; tokens must be unique."
                )
            index[token] = i
        self._tokens = tuple(tokens)
        self._index = index
        self._table = None

    @property
    def tokens(self):
        """All tokens in id order (a tuple of str)."""
        return self._tokens

    @property
    def size(self):
        """Number of tokens, specials included."""
        return len(self._tokens)

    def __len__(self):
        return len(self._tokens)

    def __contains__(self, token):
        return token in self._index

    def __eq__(self, other):
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self._tokens == other._tokens

    __hash__ = None

    def __repr__(self):
        return f"Vocabulary(size={self.size})"

    @property
    def bos_id(self):
        """Id of `<S>` (0)."""
        return 0

    @property
    def eos_id(self):
        """Id of `</S>` (1)."""
        return 1

    @property
    def unk_id(self):
        """Id of `<UNK>` (2)."""
        return 2

    def token_to_id(self, token):
        """The id of `token`; `unk_id` for a token not in the vocabulary."""
        return self._index.get(token, self.unk_id)

    def id_to_token(self, token_id):
        """The token with id `token_id` (IndexError if out of range)."""
        if not 0 <= token_id < self.size:
            raise IndexError(
                f"Received an invalid value for argument `token_id`, "
                f"expected 0 <= id < {self.size}, got {token_id}."
            )
        return self._tokens[token_id]

    def lookup_table(self):
        """An in-graph `tf.lookup.StaticHashTable`: string -> int32 id.

        Unknown strings (the empty string too) give `unk_id`. Built once
        and cached when called eagerly; inside a `tf.function` each call
        builds a table that belongs to that graph.
        """
        import tensorflow as tf

        if self._table is not None and tf.executing_eagerly():
            return self._table
        table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self._tokens, dtype=tf.string),
                tf.range(self.size, dtype=tf.int32),
            ),
            default_value=self.unk_id,
        )
        if tf.executing_eagerly():
            self._table = table
        return table

    @classmethod
    def load(cls, path):
        """Reads a bilm-tf vocabulary file (UTF-8, one token per line).

        Surrounding whitespace of a line (a `\\r` of Windows line ends
        included) is ignored, and so are a UTF-8 byte-order mark and
        trailing newlines; anything else that is not one token per line is
        an error.

        Args:
            path: str or path-like.

        Returns:
            A `Vocabulary`.

        Raises:
            FileNotFoundError: `path` does not exist.
            ValueError: the file is not valid UTF-8, its first three lines
                are not `<S>`, `</S>`, `<UNK>`, or a line holds no token,
                several tokens, or a repeated token. The message names the
                file and the line number.
        """
        path = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        lines = data.split(b"\n")
        while lines and not lines[-1].strip():
            lines.pop()  # trailing newline(s)
        head = [
            raw.decode("utf-8", "replace").strip(_ASCII_WHITESPACE)
            for raw in lines[:3]
        ]
        if head != list(SPECIAL_TOKENS):
            number = 1 + next(
                (i for i, t in enumerate(head) if t != SPECIAL_TOKENS[i]),
                len(head),
            )
            raise ValueError(
                f"Vocabulary file {path!r} line {number}: the first three "
                f"lines must be {list(SPECIAL_TOKENS)} (bilm-tf format), found "
                f"{head!r}."
            )
        tokens = []
        for number, raw in enumerate(lines, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(
                    f"Vocabulary file {path!r} line {number}: expected UTF-8 "
                    f"text, found bytes {raw!r:.80} ({e.reason} at byte "
                    f"{e.start})."
                ) from None
            token = line.strip(_ASCII_WHITESPACE)
            problem = _token_problem(token)
            if problem:
                raise ValueError(
                    f"Vocabulary file {path!r} line {number}: expected one "
                    f"token, found {line!r:.80}, which {problem}."
                )
            tokens.append(token)
        try:
            return cls(tokens)
        except ValueError as e:
            raise ValueError(f"Vocabulary file {path!r}: {e}") from None

    def save(self, path):
        """Writes the vocabulary file atomically (UTF-8, `\\n` line ends)."""
        with atomic_write(os.fspath(path), "w", encoding="utf-8") as f:
            for token in self._tokens:
                f.write(token + "\n")

    @classmethod
    def from_counts(cls, counts, min_count=1, max_size=None):
        """A vocabulary from token counts: most frequent first.

        Tokens are ordered by descending count, ties broken by the token
        string (code point order), so the result is deterministic. Counts
        of the special tokens themselves are ignored (they are never
        repeated).

        Args:
            counts: mapping str token -> int count.
            min_count: int >= 1. Tokens seen fewer times are left out.
            max_size: int >= 3 or None. Maximum vocabulary size, the three
                specials included.

        Returns:
            A `Vocabulary`.
        """
        check_positive_int("min_count", min_count)
        if max_size is not None and (
            isinstance(max_size, bool)
            or not isinstance(max_size, int)
            or max_size < len(SPECIAL_TOKENS)
        ):
            raise ValueError(
                "Received an invalid value for argument `max_size`, expected "
                f"None or an integer >= 3 (the specials count), got "
                f"{max_size!r}."
            )
        kept = [
            (token, count)
            for token, count in counts.items()
            if count >= min_count and token not in SPECIAL_TOKENS
        ]
        kept.sort(key=lambda item: (-item[1], item[0]))
        if max_size is not None:
            kept = kept[: max_size - len(SPECIAL_TOKENS)]
        return cls(list(SPECIAL_TOKENS) + [token for token, _ in kept])

    @classmethod
    def build(cls, file_pattern, min_count=1, max_size=None):
        """Counts a sentence-per-line corpus and builds its vocabulary.

        One streaming pass (memory grows with the number of distinct tokens
        only). Tokens are split on ASCII whitespace; blank lines and lines
        that are not valid UTF-8 are skipped, as in `make_lm_dataset`.

        Args:
            file_pattern: str or list of str. Glob pattern(s); `.gz` files
                are read with gzip.
            min_count: int >= 1. Minimum count to enter the vocabulary.
            max_size: int >= 3 or None. Maximum size, specials included.

        Returns:
            A `Vocabulary`, ordered as `from_counts`.
        """
        counts, stats = corpus.count_tokens(file_pattern)
        vocab = cls.from_counts(counts, min_count=min_count, max_size=max_size)
        logger.info(
            "Built a vocabulary of %d tokens from %d distinct (%s)",
            vocab.size,
            len(counts),
            stats.summary(),
        )
        return vocab
