"""Sentence-per-line corpus files: listing, streaming reads and statistics.

A corpus is one or more text files, one whitespace-tokenized sentence per
line, plain or gzip-compressed (name ends in `.gz`). The rules here are the
ones `keras_elmo.data.make_lm_dataset` applies in graph, so counts made in
Python match what training sees:

- lines end at `\\n`; a line is stripped of ASCII whitespace (so a
  Windows `\\r\\n` ends a line like `\\n`);
- a UTF-8 byte-order mark (`EF BB BF`) at the start of a line is dropped
  (Windows editors write one at the start of a file);
- a blank line (empty after stripping) is skipped;
- a line that is not valid UTF-8 is skipped whole ("malformed");
- tokens are the pieces between runs of ASCII whitespace (space, `\\t`,
  `\\n`, `\\r`, `\\v`, `\\f`), as `tf.strings.split`; other Unicode spaces
  (no-break space, ideographic space) are part of a token;
- a sentence longer than `max_tokens` becomes consecutive pieces of at most
  `max_tokens` tokens.
"""

import collections
import dataclasses
import glob
import gzip
import logging
import os

from keras_elmo.utils import check_positive_int

logger = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"


def list_files(file_pattern):
    """The files matching a glob pattern (or several), sorted.

    Args:
        file_pattern: str or path-like, or a list/tuple of them. Glob
            patterns (`*`, `?`, `[...]`, and `**` recursively); a plain
            path matches itself.

    Returns:
        A sorted list of unique file paths (str).

    Raises:
        FileNotFoundError: a pattern matches no file (the error names it).
        TypeError: `file_pattern` is neither a path nor a list of paths.
    """
    if isinstance(file_pattern, (str, bytes, os.PathLike)):
        patterns = [file_pattern]
    elif isinstance(file_pattern, (list, tuple)) and file_pattern:
        patterns = list(file_pattern)
    else:
        raise TypeError(
            "`file_pattern` must be a glob pattern (str) or a non-empty list "
            f"of them, received {type(file_pattern).__name__}: "
            f"{file_pattern!r:.80}"
        )
    files = set()
    for pattern in patterns:
        if isinstance(pattern, bytes):
            pattern = pattern.decode("utf-8")
        pattern = os.fspath(pattern)
        matches = [
            path
            for path in glob.glob(pattern, recursive=True)
            if os.path.isfile(path)
        ]
        if not matches:
            raise FileNotFoundError(
                f"`file_pattern` {pattern!r} matches no file (expected a "
                "glob pattern of sentence-per-line text files)."
            )
        files.update(matches)
    return sorted(files)


def open_lines(path):
    """Opens a corpus file for binary line iteration (gzip if `.gz`)."""
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


@dataclasses.dataclass
class CorpusStats:
    """What a pass over a corpus saw (see the module docstring for rules).

    Attributes:
        files: int. Number of files read.
        lines: int. All lines, including blank and malformed ones.
        blank_lines: int. Lines empty after stripping whitespace.
        malformed_lines: int. Lines that are not valid UTF-8 (skipped).
        sentences: int. Training sentences: kept lines, counting a line
            longer than `max_tokens` once per piece.
        tokens: int. Tokens in the kept lines (no `<S>`/`</S>` added).
        oov_tokens: int or None. Tokens not in the vocabulary (they map to
            `<UNK>`); None when no vocabulary was given.
    """

    files: int = 0
    lines: int = 0
    blank_lines: int = 0
    malformed_lines: int = 0
    sentences: int = 0
    tokens: int = 0
    oov_tokens: int | None = None

    @property
    def oov_rate(self):
        """Fraction of tokens out of the vocabulary (None without one)."""
        if self.oov_tokens is None:
            return None
        return self.oov_tokens / self.tokens if self.tokens else 0.0

    def summary(self):
        """A one-line human-readable summary."""
        text = (
            f"{self.files} files, {self.lines} lines ({self.blank_lines} "
            f"blank, {self.malformed_lines} not UTF-8 skipped), "
            f"{self.sentences} sentences, {self.tokens} tokens"
        )
        if self.oov_tokens is not None:
            text += f", {self.oov_tokens} OOV ({self.oov_rate:.2%})"
        return text


def _num_pieces(num_tokens, max_tokens):
    if max_tokens is None:
        return 1
    return -(-num_tokens // max_tokens)


def iter_sentences(file_pattern, stats=None):
    """Streams the kept lines of a corpus as lists of `bytes` tokens.

    Memory stays flat in the file size: files are read line by line.

    Args:
        file_pattern: glob pattern(s), as `list_files`.
        stats: optional `CorpusStats`, updated in place with `files`,
            `lines`, `blank_lines` and `malformed_lines`.

    Yields:
        list of bytes. The tokens of each kept (non-blank, valid UTF-8)
        line, before any `max_tokens` split.
    """
    for path in list_files(file_pattern):
        if stats is not None:
            stats.files += 1
        with open_lines(path) as f:
            for line in f:
                if stats is not None:
                    stats.lines += 1
                if line.startswith(UTF8_BOM):
                    line = line[len(UTF8_BOM) :]
                tokens = line.split()
                if not tokens:
                    if stats is not None:
                        stats.blank_lines += 1
                    continue
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError:
                    if stats is not None:
                        stats.malformed_lines += 1
                    continue
                yield tokens


def count_tokens(file_pattern, max_tokens=None):
    """Counts tokens in one streaming pass and gathers `CorpusStats`.

    Args:
        file_pattern: glob pattern(s), as `list_files`.
        max_tokens: int or None. Only affects `stats.sentences`.

    Returns:
        `(counts, stats)`: a `collections.Counter` of str token -> count,
        and the `CorpusStats` (with `oov_tokens` None).
    """
    check_positive_int("max_tokens", max_tokens, allow_none=True)
    stats = CorpusStats()
    counts = collections.Counter()
    for tokens in iter_sentences(file_pattern, stats):
        counts.update(tokens)
        stats.tokens += len(tokens)
        stats.sentences += _num_pieces(len(tokens), max_tokens)
    logger.info("Counted %s", stats.summary())
    return (
        collections.Counter({k.decode("utf-8"): v for k, v in counts.items()}),
        stats,
    )


def scan_corpus(file_pattern, vocabulary=None, max_tokens=None):
    """One streaming pass over a corpus: line, sentence and token counts.

    Args:
        file_pattern: str or list of str. Glob pattern(s) of
            sentence-per-line files (`.gz` read with gzip).
        vocabulary: optional `keras_elmo.data.Vocabulary`; when given,
            `oov_tokens` counts tokens it does not contain.
        max_tokens: int or None. Sentences longer than this count once per
            piece of at most `max_tokens` tokens, as in `make_lm_dataset`.

    Returns:
        A `CorpusStats`.

    Raises:
        FileNotFoundError: a pattern matches no file.
        ValueError: `max_tokens` is not a positive integer or None.
    """
    check_positive_int("max_tokens", max_tokens, allow_none=True)
    stats = CorpusStats()
    known = None
    if vocabulary is not None:
        known = {token.encode("utf-8") for token in vocabulary.tokens}
        stats.oov_tokens = 0
    for tokens in iter_sentences(file_pattern, stats):
        stats.tokens += len(tokens)
        stats.sentences += _num_pieces(len(tokens), max_tokens)
        if known is not None:
            stats.oov_tokens += sum(1 for t in tokens if t not in known)
    logger.info("Scanned %s", stats.summary())
    return stats
