"""Every robustness table, in the order of CASES.md."""

import api_cases
import cli_cases
import file_cases
import ref_cases
import savedmodel_cases

ALL_CASES = (
    api_cases.CASES
    + savedmodel_cases.CASES
    + cli_cases.CASES
    + file_cases.CASES
    + ref_cases.CASES
)
RUNNABLE = [case for case in ALL_CASES if case.run is not None]
