"""Every figure the docs quote from a results file matches that file.

A quoted figure is written in Markdown as the number followed by an HTML
comment naming its source, invisible once rendered:

    78.3<!-- fig benchmarks/results/x.json result/perplexity {:.1f} -->

(the file, relative to the repository root; the `/`-separated path of
keys and list indices inside its JSON, which may hold spaces; the Python
format, in braces, that turns the value into the quoted text).
benchmarks/README.md, "Results discipline".
"""

import json
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_renderer():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "render_results", os.path.join(REPO, "tools", "render_results.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = _load_renderer()
FIGURE = render.FIGURE
lookup = render.lookup
DOCUMENTS = render.QUOTING_DOCUMENTS
ANNOTATION = re.compile(r"<!-- fig ")


def figures(document):
    with open(os.path.join(REPO, document), encoding="utf-8") as f:
        text = f.read()
    found = list(FIGURE.finditer(text))
    # An annotation the pattern cannot read (no number right before it,
    # a missing field) must fail, not be skipped.
    assert len(found) == len(ANNOTATION.findall(text)), document
    return found


def quoted_figures():
    cases = []
    for document in DOCUMENTS:
        if os.path.exists(os.path.join(REPO, document)):
            cases += [(document, m) for m in figures(document)]
    return cases


CASES = quoted_figures()


def test_the_readme_quotes_results_files():
    assert sum(1 for document, _ in CASES if document == "README.md") >= 3


@pytest.mark.parametrize(
    "document, match",
    CASES,
    ids=[f"{d}:{m.group('key')}" for d, m in CASES],
)
def test_quoted_figure_matches_its_results_file(document, match):
    path = os.path.join(REPO, match.group("file"))
    assert os.path.exists(path), f"{document} quotes missing {path}"
    with open(path, encoding="utf-8") as f:
        payload = json.load(f)
    value = lookup(payload, match.group("key"))
    assert match.group("format").format(value) == match.group("quoted"), (
        f"{document} quotes {match.group('quoted')} for "
        f"{match.group('file')}:{match.group('key')} = {value!r}"
    )


def test_results_files_record_their_provenance():
    """Files under a results/ folder say which commit, machine and load
    printed them, and when."""
    quoted = {m.group("file") for _, m in CASES}
    for name in sorted(quoted):
        with open(os.path.join(REPO, name), encoding="utf-8") as f:
            payload = json.load(f)
        # A file that accumulates runs (train_defaults.json) records each.
        if "provenance" in payload:
            records = [payload["provenance"]]
        else:
            records = [run["provenance"] for run in payload["runs"]]
        assert records, name
        for record in records:
            for field in ("commit", "cpu_model", "cpu_cores", "load_average"):
                assert record[field] is not None, (name, field)
            date = record["date_utc"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", date)


def test_results_documents_are_rendered_from_their_files():
    """benchmarks/RESULTS.md and the generated tables of
    examples/RESULTS.md are what `tools/render_results.py` draws from
    the results files now: a rerun without re-rendering, or a table
    edited by hand, fails here."""
    for document, text in render.rendered_documents().items():
        with open(os.path.join(REPO, document), encoding="utf-8") as f:
            assert f.read() == text, (
                f"{document} is out of date: python tools/render_results.py"
            )


def test_every_results_file_is_in_benchmarks_results_md():
    with open(
        os.path.join(REPO, "benchmarks/RESULTS.md"), encoding="utf-8"
    ) as f:
        text = f.read()
    for folder in ("benchmarks/results", "examples/results"):
        for name in os.listdir(os.path.join(REPO, folder)):
            if name.endswith(".json"):
                assert f"## `{folder}/{name}`" in text, name


freshness = render._sibling("results_freshness")


@pytest.mark.skipif(
    not freshness.has_history(), reason="needs the git history of a clone"
)
@pytest.mark.parametrize("document", DOCUMENTS)
def test_quoted_files_are_clean_and_fresh_or_marked_as_older(document):
    """A quoted file written with uncommitted changes, or whose script
    (or a provenance-named module) changed after its commit, is rerun or
    marked `<!-- measured-at FILE COMMIT -->` beside prose saying so."""
    with open(os.path.join(REPO, document), encoding="utf-8") as f:
        text = f.read()
    assert freshness.document_problems(text, render.load) == []


def test_caveats_are_rendered_under_their_files():
    text = render.render_benchmarks_results()
    assert render.CAVEATS
    for relative, caveat in render.CAVEATS.items():
        section = text.split(f"## `{relative}`", 1)[1].split("\n## ", 1)[0]
        assert f"> {caveat}" in section, relative


@pytest.mark.parametrize(
    "text, quoted",
    [
        ("at most 6.2e-07<!-- fig f.json a/b {:.1e} --> of", "6.2e-07"),
        ("(-1.5E+03<!-- fig f.json a {:.1E} -->)", "-1.5E+03"),
        ("44.1%<!-- fig f.json a {:.1%} -->-47.8%", "44.1%"),
        ("1,234<!-- fig f.json a {:,} -->", "1,234"),
    ],
)
def test_a_quote_is_read_whole_with_its_exponent_and_sign(text, quoted):
    match = FIGURE.search(text)
    assert match is not None and match.group("quoted") == quoted
