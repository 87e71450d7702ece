"""Corpus health: what a pass over sentence-per-line files keeps, skips
and why, and the checks that stop a command on data that is clearly wrong.

Every file is read with the rules of `keras_elmo.data.corpus` (the ones
training applies in graph): a line is stripped of ASCII whitespace (so a
Windows `\\r\\n` line end is one line end), a UTF-8 byte-order mark at the
start of a line is dropped, a blank line is skipped, a line that is not
valid UTF-8 is skipped whole, and a line of more than `max_tokens` tokens
is split into pieces. Per file it counts lines, blank lines, lines that
are not UTF-8, lines holding NUL bytes, over-long lines and their pieces,
tokens and (with a vocabulary) out-of-vocabulary tokens.

A check stops the command with a `CorpusError` (a `ValueError` naming the
file, the first line concerned, what was found and the flag that relaxes
it) when:

- the head of a file says it is not UTF-8 text (a UTF-16/32 byte-order
  mark, UTF-16 without one, gzip data without `.gz`; see
  `keras_elmo.data.corpus_health`): always;
- more than `max_invalid_fraction` (default 0.5, "most lines") of a
  file's non-blank lines are not valid UTF-8; the message says whether
  they read as Latin-1 / Windows-1252 text or as binary data;
- more than `max_nul_fraction` (default 0.1) of a file's bytes are NUL
  (binary data: text has none; a stray NUL in a line is only counted);
- most non-blank lines hold a `\\r` inside them (classic Mac line ends:
  the file would read as one sentence);
- a vocabulary is given and more than `max_oov_rate` (default 0.5) of a
  file's tokens are not in it: the vocabulary belongs to another corpus
  (a vocabulary built by `keras-elmo vocab` from the corpus itself leaves
  a few percent out);
- `require_sentences` and no file holds a sentence.

Set a threshold to 1 to turn its check off.

Not UTF-8 text: what a file that is not UTF-8 text looks like: byte-order
marks, NUL patterns, compression and single-byte encodings, each with the
command that converts it.

`sniff_head(head, path)` looks at the first bytes of a (decompressed)
file and returns a description of why it is clearly not UTF-8 text, or
None. The rules, in order:

- a UTF-32 or UTF-16 byte-order mark (`FF FE 00 00`, `00 00 FE FF`,
  `FF FE`, `FE FF`);
- gzip data (`1F 8B`) in a file whose name does not end in `.gz`;
- UTF-16 without a byte-order mark: more than 30% of the bytes are NUL
  and at least 90% of the NULs sit at odd offsets (little-endian, ASCII
  text `h\\0i\\0`) or at even offsets (big-endian).

`looks_single_byte(line)` is True for a line that is not UTF-8 but reads
as Latin-1 / Windows-1252 text: no control bytes other than tab and line
ends, and no byte Windows-1252 leaves undefined. Random binary lines
almost always hold a control byte, so they do not pass.
"""

import dataclasses
import gzip
import logging
import zlib

from keras_elmo.data import corpus

HEAD_BYTES = 4096

_ICONV = "iconv -f {src} -t UTF-8 {path} > {path}.utf8"
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32 little-endian (byte-order mark FF FE 00 00)"),
    (b"\x00\x00\xfe\xff", "UTF-32 big-endian (byte-order mark 00 00 FE FF)"),
    (b"\xff\xfe", "UTF-16 little-endian (byte-order mark FF FE)"),
    (b"\xfe\xff", "UTF-16 big-endian (byte-order mark FE FF)"),
)
# Bytes Windows-1252 does not define.
_CP1252_UNDEFINED = frozenset(b"\x81\x8d\x8f\x90\x9d")
_ALLOWED_CONTROLS = frozenset(b"\t\r\n")


def _iconv(source, path):
    return _ICONV.format(src=source, path=path)


def sniff_head(head, path):
    """Why the file starting with `head` is not UTF-8 text, or None.

    Args:
        head: bytes, the first bytes of the file (decompressed).
        path: str, the file's name (for `.gz` and the message's command).

    Returns:
        A sentence naming the encoding it looks like and how to convert
        it, or None when nothing in the head says "not text".
    """
    for bom, name in _BOMS:
        if head.startswith(bom):
            source = name.split(" ")[0]  # iconv reads the mark itself
            return (
                f"it looks like {name}, not UTF-8; convert it with "
                f"`{_iconv(source, path)}`"
            )
    if head.startswith(b"\x1f\x8b") and not path.endswith(".gz"):
        return (
            "it is gzip-compressed data but its name does not end in .gz; "
            "rename it to end in .gz (or `gunzip` it)"
        )
    return _sniff_utf16(head, path)


def _sniff_utf16(head, path):
    nuls = head.count(0)
    if len(head) < 8 or nuls <= 0.3 * len(head):
        return None
    odd = sum(1 for i in range(1, len(head), 2) if head[i] == 0)
    for share, source in ((odd, "UTF-16LE"), (nuls - odd, "UTF-16BE")):
        if share >= 0.9 * nuls:
            return (
                f"it looks like {source} text without a byte-order mark "
                f"(every other byte is NUL), not UTF-8; convert it with "
                f"`{_iconv(source, path)}`"
            )
    return None


def looks_single_byte(line):
    """True if a non-UTF-8 line reads as Latin-1 / Windows-1252 text."""
    for byte in line:
        if byte < 0x20 and byte not in _ALLOWED_CONTROLS:
            return False
        if byte == 0x7F or byte in _CP1252_UNDEFINED:
            return False
    return True


def single_byte_hint(path):
    """The sentence for a file whose bad lines read as Latin-1 text."""
    return (
        "its lines that are not UTF-8 read as Latin-1 / Windows-1252 text; "
        f"convert it with `{_iconv('WINDOWS-1252', path)}`"
    )


def binary_hint():
    return "this looks like binary data, not sentence-per-line text"


logger = logging.getLogger(__name__)

DEFAULT_MAX_INVALID_FRACTION = 0.5
DEFAULT_MAX_NUL_FRACTION = 0.1
DEFAULT_MAX_OOV_RATE = 0.5


class CorpusError(ValueError):
    """A corpus file is clearly not usable text (the message says why)."""


@dataclasses.dataclass(frozen=True)
class HealthLimits:
    """Thresholds of the corpus checks (fractions in [0, 1]; 1 = off).

    Attributes:
        max_invalid_fraction: float. Most non-blank lines of a file that
            may be invalid UTF-8 (the `max_invalid_fraction` setting).
        max_nul_fraction: float. Most bytes of a file that may be NUL
            (the `max_nul_fraction` setting).
        max_oov_rate: float. Most tokens of a file that may be out of the
            vocabulary (the `max_oov_rate` setting).
    """

    max_invalid_fraction: float = DEFAULT_MAX_INVALID_FRACTION
    max_nul_fraction: float = DEFAULT_MAX_NUL_FRACTION
    max_oov_rate: float = DEFAULT_MAX_OOV_RATE

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            flag = "--" + field.name.replace("_", "-")
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0.0 <= value <= 1.0
            ):
                raise ValueError(
                    f"Received an invalid value for `{flag}`, expected a "
                    f"fraction in [0, 1] (1 turns the check off), got "
                    f"{value!r}."
                )


@dataclasses.dataclass
class FileHealth:
    """The counts of one file (line numbers count from 1)."""

    path: str
    lines: int = 0
    bytes: int = 0
    blank: int = 0
    invalid_utf8: int = 0
    single_byte_like: int = 0
    first_invalid: int = None
    first_invalid_text: bytes = b""
    nul_bytes: int = 0
    nul_lines: int = 0
    first_nul: int = None
    interior_cr_lines: int = 0
    first_cr: int = None
    long_lines: int = 0
    first_long: int = None
    sentences: int = 0
    tokens: int = 0
    oov: int = None
    first_oov: tuple = None

    @property
    def kept(self):
        return self.lines - self.blank - self.invalid_utf8

    @property
    def oov_rate(self):
        if self.oov is None:
            return None
        return self.oov / self.tokens if self.tokens else 0.0

    def summary(self, max_tokens=None):
        """One line: counts, then what was skipped and why."""
        text = (
            f"{self.path}: {self.lines} lines read, {self.kept} kept, "
            f"{self.tokens} tokens"
        )
        if self.oov is not None:
            text += f", {self.oov_rate:.1%} OOV"
        skipped = []
        if self.blank:
            skipped.append(f"{self.blank} blank")
        if self.invalid_utf8:
            skipped.append(
                f"{self.invalid_utf8} not UTF-8 (first at line "
                f"{self.first_invalid})"
            )
        if skipped:
            text += "; skipped " + ", ".join(skipped)
        if self.long_lines:
            text += (
                f"; {self.long_lines} over {max_tokens} tokens split (first "
                f"at line {self.first_long}), {self.sentences} sentences"
            )
        if self.nul_lines:
            text += f"; {self.nul_lines} lines hold NUL bytes"
        return text


@dataclasses.dataclass
class CorpusHealth:
    """The `FileHealth` of every file of a corpus and their totals."""

    name: str
    files: list
    max_tokens: int = None

    @property
    def sentences(self):
        return sum(f.sentences for f in self.files)

    @property
    def tokens(self):
        return sum(f.tokens for f in self.files)

    def summary_lines(self, max_files=20):
        """Human-readable lines: one per file (at most `max_files`), then
        the total."""
        lines = [
            f"corpus check {self.name}: " + f.summary(self.max_tokens)
            for f in self.files[:max_files]
        ]
        if len(self.files) > max_files:
            lines.append(
                f"corpus check {self.name}: ... and "
                f"{len(self.files) - max_files} more files"
            )
        total = sum(f.lines for f in self.files)
        skipped = sum(f.blank + f.invalid_utf8 for f in self.files)
        text = (
            f"corpus check {self.name}: total {len(self.files)} files, "
            f"{total} lines, {skipped} skipped, {self.sentences} "
            f"sentences, {self.tokens} tokens"
        )
        if self.files and self.files[0].oov is not None:
            oov = sum(f.oov for f in self.files)
            text += f", {oov / max(self.tokens, 1):.1%} OOV"
        return lines + [text]


def _open_checked(path):
    """The binary line reader of `path`; a `.gz` that is not gzip data is
    a `CorpusError`."""
    if not path.endswith(".gz"):
        return open(path, "rb")
    f = gzip.open(path, "rb")
    try:
        f.peek(1)
    except (OSError, EOFError, zlib.error) as e:
        f.close()
        raise CorpusError(
            f"Corpus file {path!r} is named .gz but is not readable gzip "
            f"data ({e}); decompress or rename it."
        ) from None
    return f


def scan_file(path, known=None, max_tokens=None):
    """Counts one file with the training rules (see the module docstring).

    Args:
        path: str, a plain or `.gz` sentence-per-line file.
        known: optional set of bytes tokens (the vocabulary); when given,
            `oov` counts tokens not in it.
        max_tokens: int or None; longer lines count as split.

    Returns:
        A `FileHealth`.

    Raises:
        CorpusError: the file's head is clearly not UTF-8 text, or a `.gz`
            file is not gzip data / is truncated.
    """
    health = FileHealth(path, oov=None if known is None else 0)
    try:
        with _open_checked(path) as f:
            head = f.peek(HEAD_BYTES)[:HEAD_BYTES]
            problem = sniff_head(head, path)
            if problem:
                raise CorpusError(
                    f"Corpus file {path!r} is not UTF-8 text: {problem}."
                )
            for number, line in enumerate(f, start=1):
                _count_line(health, number, line, known, max_tokens)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise CorpusError(
            f"Corpus file {path!r} is damaged gzip data after line "
            f"{health.lines} ({e}); expected a complete .gz file."
        ) from None
    return health


def _count_line(health, number, line, known, max_tokens):
    health.lines += 1
    health.bytes += len(line)
    nuls = line.count(0)
    if nuls:
        health.nul_bytes += nuls
        health.nul_lines += 1
        health.first_nul = health.first_nul or number
    body = line.rstrip(b"\r\n")
    if b"\r" in body.strip():
        health.interior_cr_lines += 1
        health.first_cr = health.first_cr or number
    if line.startswith(corpus.UTF8_BOM):
        line = line[len(corpus.UTF8_BOM) :]
    tokens = line.split()
    if not tokens:
        health.blank += 1
        return
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        health.invalid_utf8 += 1
        if health.first_invalid is None:
            health.first_invalid = number
            health.first_invalid_text = body[:60]
        if looks_single_byte(line):
            health.single_byte_like += 1
        return
    health.tokens += len(tokens)
    if max_tokens is not None and len(tokens) > max_tokens:
        health.long_lines += 1
        if health.first_long is None:
            health.first_long = number
        health.sentences += -(-len(tokens) // max_tokens)
    else:
        health.sentences += 1
    if known is not None:
        unknown = [t for t in tokens if t not in known]
        health.oov += len(unknown)
        if unknown and health.first_oov is None:
            health.first_oov = (number, unknown[0].decode("utf-8"))


def check_file(health, limits):
    """Raises a `CorpusError` if `health` breaks one of `limits`."""
    path, nonblank = health.path, health.lines - health.blank
    if health.bytes and health.nul_bytes > limits.max_nul_fraction * (
        health.bytes
    ):
        raise CorpusError(
            f"Corpus file {path!r} is not text: {health.nul_bytes} of its "
            f"{health.bytes} bytes are NUL "
            f"({health.nul_bytes / health.bytes:.0%}, more than "
            f"`max_nul_fraction={limits.max_nul_fraction:g}`; first at line "
            f"{health.first_nul}); {binary_hint()}."
        )
    if nonblank and health.invalid_utf8 > (
        limits.max_invalid_fraction * nonblank
    ):
        hint = (
            single_byte_hint(path)
            if health.single_byte_like == health.invalid_utf8
            else binary_hint()
        )
        raise CorpusError(
            f"Corpus file {path!r}: {health.invalid_utf8} of its "
            f"{nonblank} non-blank lines "
            f"({health.invalid_utf8 / nonblank:.0%}) are not valid UTF-8, "
            "more than "
            f"`max_invalid_fraction={limits.max_invalid_fraction:g}` (first "
            f"at line {health.first_invalid}: {health.first_invalid_text!r}); "
            f"{hint}."
        )
    if health.interior_cr_lines and health.interior_cr_lines * 2 > nonblank:
        raise CorpusError(
            f"Corpus file {path!r} uses `\\r` (classic Mac) line ends: "
            f"{health.interior_cr_lines} of its {nonblank} lines hold a "
            f"`\\r` inside (first at line {health.first_cr}), so each would "
            "be read as one sentence; convert "
            f"it with `tr '\\r' '\\n' < {path} > {path}.lf`."
        )
    rate = health.oov_rate
    if rate is not None and health.tokens and rate > limits.max_oov_rate:
        raise CorpusError(
            f"Corpus file {path!r}: {health.oov} of its {health.tokens} "
            f"tokens ({rate:.1%}) are not in the vocabulary (first "
            f"{health.first_oov[1]!r} at line {health.first_oov[0]}), more "
            f"than `max_oov_rate={limits.max_oov_rate:g}`; the vocabulary does "
            "not belong to this corpus (build one with `keras-elmo vocab`)."
        )


def check_corpus(
    name,
    file_pattern,
    vocabulary=None,
    max_tokens=None,
    limits=None,
    require_sentences=True,
):
    """Scans and checks a corpus; returns its `CorpusHealth`.

    Args:
        name: str, how messages name the corpus (e.g. `"train"`; the
            command line passes its flag).
        file_pattern: glob pattern(s), as `keras_elmo.data.list_files`.
        vocabulary: optional `keras_elmo.data.Vocabulary` (OOV check).
        max_tokens: int or None, the sentence split length.
        limits: `HealthLimits` (default thresholds when None).
        require_sentences: bool; if True a corpus without any sentence is
            an error.

    Raises:
        FileNotFoundError: a pattern matches no file.
        CorpusError: a check failed (see the module docstring).
    """
    limits = limits or HealthLimits()
    known = None
    if vocabulary is not None:
        known = {token.encode("utf-8") for token in vocabulary.tokens}
    report = CorpusHealth(name, [], max_tokens)
    for path in corpus.list_files(file_pattern):
        health = scan_file(path, known, max_tokens)
        check_file(health, limits)
        if health.invalid_utf8:
            logger.warning(
                "%s: %d lines are not valid UTF-8 and are skipped (first at "
                "line %d).",
                path,
                health.invalid_utf8,
                health.first_invalid,
            )
        report.files.append(health)
    if require_sentences and report.sentences == 0:
        raise CorpusError(
            f"`{name}` {file_pattern!r} holds no sentence to use: "
            f"{sum(f.lines for f in report.files)} lines in "
            f"{len(report.files)} files, all blank or not UTF-8; expected "
            "sentence-per-line UTF-8 text."
        )
    logger.info("%s", report.summary_lines()[-1])
    return report
