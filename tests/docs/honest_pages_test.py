"""README.md and docs/*.md hold no typed measurement, commit hash or
issue number.

- A measurement (a number with a unit of time, speed, ratio or size, a
  decimal percentage, a number in scientific notation with a decimal
  mantissa) is quoted from a results file: the number is followed by
  its `<!-- fig FILE KEY {FMT} -->` marker (tests/results_files_test.py
  checks the value). Settings and bounds are written without a
  measurement's form: whole numbers (`64 GiB`, `1%` of the data, `3x`),
  a bound as `1e-5`, or inside backquotes.
- Commit hashes belong in results files, `benchmarks/RESULTS.md` and
  commit messages; the one place a page shows one is the visible text
  after a `<!-- measured-at ... -->` marker, which
  tools/results_freshness.py holds true.
- Issue numbers and session numbers belong in the tracker.
- A claim of identity (identical, bit for bit, bit-exact, bitwise)
  names, in its paragraph, the test that holds it (a `tests/` path) or
  the results file that measured it (a fig marker).
"""

import glob
import os
import re

import pytest

from tests.results_files_test import freshness

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
PAGES = ["README.md"] + sorted(
    os.path.relpath(p, REPO)
    for p in glob.glob(os.path.join(REPO, "docs", "*.md"))
)
FIG = re.compile(r"<!-- fig [^>]*-->")
QUOTED = "\u24bb"  # stands for a fig marker in the scanned text
HASH = re.compile(
    r"(?<![0-9A-Za-z_/.+-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])"
    r"[0-9a-f]{7,40}(?![0-9A-Za-z_])"
)
ISSUE = re.compile(r"(?i)\bissues?\s+#?\d+|(?<![\w&/])#\d+\b|\bsessions?\s+\d")
MEASUREMENT = re.compile(
    r"(?<![\w.`/+-])(?P<number>\d+(?:,\d{3})*(?:\.\d+)?)(?P<unit>"
    r"(?:x|×)(?![\w])"
    r"|\s?(?:ms|s|seconds|minutes|hours|tokens/s|sentences/s|lines/s"
    r"|GFLOP/s|MFLOP|GHz)(?![\w/])"
    r"|%|\s?(?:KB|kB|KiB|MB|MiB|GB|GiB)(?![\w]))"
)
IDENTITY = re.compile(
    r"(?i)\b(identical|bit[- ]for[- ]bit|bit-exact|bitwise|bit-identical)\b"
)
SCIENTIFIC = re.compile(r"(?<![\w.`])\d\.\d+[eE][-+]?\d+")


def scanned(page):
    """The page with each checked measured-at text blanked and each fig
    marker replaced by `QUOTED` (offsets kept)."""
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        text = f.read()
    for start, end in reversed(freshness.visible_spans(text)):
        text = text[:start] + " " * (end - start) + text[end:]
    return FIG.sub(lambda m: QUOTED + " " * (len(m.group(0)) - 1), text)


def prose(text):
    """`text` with fenced code and inline code blanked (offsets kept)."""
    text = re.sub(r"```.*?```", lambda m: " " * len(m[0]), text, flags=re.S)
    return re.sub(r"`[^`\n]*`", lambda m: " " * len(m[0]), text)


def typed_measurements(text):
    """The measurements of `text` (already `scanned`) with no fig marker."""
    text = prose(text)
    found = []
    for match in MEASUREMENT.finditer(text):
        number, unit = match.group("number"), match.group("unit").strip()
        if QUOTED in text[match.end("number") : match.end() + 1]:
            continue
        whole = "." not in number
        if whole and unit in ("x", "×", "%", "KB", "kB", "KiB", "MB", "MiB"):
            continue  # a setting or a bound: 3x, 1% of the data, 64 GiB
        if whole and unit in ("GB", "GiB"):
            continue
        found.append(match.group(0).strip())
    for match in SCIENTIFIC.finditer(text):
        if QUOTED not in text[match.end() : match.end() + 1]:
            found.append(match.group(0))
    return found


@pytest.mark.parametrize("page", PAGES)
def test_no_commit_hash_outside_a_checked_measured_at_text(page):
    text = scanned(page)
    assert HASH.findall(text) == [], page


@pytest.mark.parametrize("page", PAGES)
def test_no_issue_or_session_number(page):
    assert ISSUE.findall(scanned(page)) == [], page


@pytest.mark.parametrize("page", PAGES)
def test_every_measurement_is_quoted_from_a_results_file(page):
    assert typed_measurements(scanned(page)) == [], page


def unbacked_identity_claims(text):
    """The identity claims of `text` whose paragraph names no test
    (`tests/...`) and quotes no results file."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        if "tests/" in paragraph or "<!-- fig " in paragraph:
            continue
        found += [m.group(0) for m in IDENTITY.finditer(paragraph)]
    return found


@pytest.mark.parametrize("page", PAGES)
def test_a_claim_of_identity_names_its_test(page):
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        assert unbacked_identity_claims(f.read()) == [], page


def test_the_identity_scanner_asks_for_a_test():
    assert unbacked_identity_claims("Outputs are identical.\n") == ["identical"]
    backed = "Bit for bit (`tests/weights/bilm_hdf5_test.py`).\n\nNext."
    assert unbacked_identity_claims(backed) == []


@pytest.mark.parametrize(
    "text, found",
    [
        ("ran at 1.97x the speed", ["1.97x"]),
        ("took 85 s on 2 cores", ["85 s"]),
        ("at 515 tokens/s", ["515 tokens/s"]),
        ("an error of 2.5e-7", ["2.5e-7"]),
        ("accuracy 45.9% here", ["45.9%"]),
        ("43.2 MB of vectors", ["43.2 MB"]),
        ("1.97<!-- fig f.json a {:.2f} -->x", []),
        ("45.9%<!-- fig f.json a {:.1%} --> of", []),
        ("a 3x target, 1% of the data, at most 64 GiB, within 1e-5", []),
        ("`--timeout 30 s` and `0.5x`", []),
    ],
)
def test_the_scanner_reads_what_it_should(text, found):
    scanned_text = FIG.sub(lambda m: QUOTED + " " * (len(m[0]) - 1), text)
    assert typed_measurements(scanned_text) == found


def test_the_scanner_finds_hashes_and_issue_numbers():
    assert HASH.findall("at commit 36de775, not at deadbeefs or 1234567") == [
        "36de775"
    ]
    marked = (
        "<!-- measured-at benchmarks/results/x.json 36de775 -->measured at "
        "`36de775`, before changes to `keras_elmo/`"
    )
    assert (
        HASH.findall(
            FIG.sub("", marked[: freshness.visible_spans(marked)[0][0]])
        )
        == []
    )
    assert ISSUE.findall("(issue 33), issue #4, see #12, session 5") == [
        "issue 33",
        "issue #4",
        "#12",
        "session 5",
    ]
