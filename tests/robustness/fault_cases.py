"""Cases over the data users get wrong (issue 19): corpora in the wrong
encoding or not text at all, a foreign vocabulary, options.json values out
of range, and writes that fail for lack of space or permission.

A CLI error row expects exit code 2, a stderr naming the file (or key) and
the problem, and that an earlier output is byte-identical afterwards
(`keeps`); disk rows run in child processes and are covered by the tests
they cite.

The rows live in `corpus_fault_cases`, `options_fault_cases` and
`disk_fault_cases`, their helpers in `fault_case_helpers`; numbered
here, in that order.
"""

from tests.robustness import corpus_fault_cases
from tests.robustness import disk_fault_cases
from tests.robustness import options_fault_cases
from tests.robustness.case_table import number

CASES = number(
    "FAULT",
    corpus_fault_cases.ROWS + options_fault_cases.ROWS + disk_fault_cases.ROWS,
)
