"""Runs every row of the robustness case tables, and keeps CASES.md equal
to the tables (`KERAS_ELMO_REGENERATE_CASES=1` rewrites it)."""

import os

import pytest

from tests.robustness.all_cases import ALL_CASES
from tests.robustness.all_cases import RUNNABLE
from tests.robustness.case_table import CASES_MD
from tests.robustness.case_table import check_error_text
from tests.robustness.case_table import ref_exists
from tests.robustness.case_table import render


@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
def test_case(case, fx):
    if case.error is None:
        case.run(fx)
        return
    with pytest.raises(case.error.kind) as raised:
        case.run(fx)
    check_error_text(case, str(raised.value))


def test_referenced_tests_exist():
    missing = [c.ref for c in ALL_CASES if c.ref and not ref_exists(c.ref)]
    assert not missing


def test_table_has_unique_ids_and_enough_cases():
    ids = [c.id for c in ALL_CASES]
    assert len(set(ids)) == len(ids)
    assert len(RUNNABLE) >= 40


def test_cases_md_is_generated_from_the_tables():
    text = render(ALL_CASES)
    if os.environ.get("KERAS_ELMO_REGENERATE_CASES") == "1":
        with open(CASES_MD, "w", encoding="utf-8") as f:
            f.write(text)
    with open(CASES_MD, encoding="utf-8") as f:
        committed = f.read()
    assert committed == text, (
        "tests/robustness/CASES.md is out of date; rerun with "
        "KERAS_ELMO_REGENERATE_CASES=1"
    )
