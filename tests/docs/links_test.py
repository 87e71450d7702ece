"""Relative links of README.md, CONTRIBUTING.md and docs/*.md resolve."""

import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
LINK = re.compile(r"\]\(([^)\s]+)\)")
PAGES = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"] + sorted(
    os.path.relpath(p, REPO)
    for p in glob.glob(os.path.join(REPO, "docs", "*.md"))
)


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        targets = LINK.findall(f.read())
    folder = os.path.dirname(os.path.join(REPO, page))
    broken = [
        t
        for t in targets
        if not t.startswith(("http://", "https://", "#", "mailto:"))
        and not os.path.exists(os.path.join(folder, t.split("#")[0]))
    ]
    assert broken == [], page


def test_license_and_citation_exist():
    with open(os.path.join(REPO, "LICENSE"), encoding="utf-8") as f:
        text = f.read()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    with open(os.path.join(REPO, "CITATION.cff"), encoding="utf-8") as f:
        citation = f.read()
    assert "doi: 10.18653/v1/N18-1202" in citation
    assert "cff-version: 1.2.0" in citation
