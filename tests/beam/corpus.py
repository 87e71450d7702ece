"""A few hundred real sentences plus the lines `keras-elmo embed` treats
specially, as two input files (plain and gzip) and their concatenation."""

import gzip
import os

SAMPLE = os.path.join(
    os.path.dirname(os.path.dirname(__file__)),
    "data",
    "en_pd_lm_sample.txt.gz",
)

# Lines that are not plain sentences, each as raw bytes (no newline).
SPECIAL = [
    b"",  # blank
    b"   \t ",  # whitespace only: blank too
    b"caf\xc3\xa9 \xff\xfe not utf-8 \xe9t\xe9",  # invalid UTF-8, kept
    b"  padded   with   spaces  \r",  # stripped; \r is whitespace
    b"no\xc2\xa0break space",  # U+00A0 separates tokens (str.split)
    b"\xef\xbb\xbfbyte-order mark first",  # the BOM is dropped
]


def real_lines(start, stop):
    """Lines `start..stop-1` of the committed en_pd_lm sample, as bytes."""
    with gzip.open(SAMPLE, "rb") as f:
        lines = f.read().split(b"\n")
    return lines[start:stop]


def write_corpus(directory, first=180, second=120):
    """Writes `a.txt` (real lines with SPECIAL mixed in) and `b.txt.gz`
    (real lines, the last without a newline), and `all.txt`, their
    concatenation in sorted-name order (what one `embed` run reads).

    Returns:
        `(pattern, concatenation, {path: list of raw lines})`.
    """
    a = real_lines(0, first)
    for i, special in enumerate(SPECIAL):
        a.insert(7 + 23 * i, special)
    b = real_lines(first, first + second)
    a_path = os.path.join(directory, "a.txt")
    b_path = os.path.join(directory, "b.txt.gz")
    with open(a_path, "wb") as f:
        f.write(b"\n".join(a) + b"\n")
    with gzip.open(b_path, "wb") as f:
        f.write(b"\n".join(b))  # no newline after the last line
    both = os.path.join(directory, "all.txt")
    with open(both, "wb") as f:
        f.write(b"\n".join(a + b))
    return os.path.join(directory, "[ab].txt*"), both, {a_path: a, b_path: b}
