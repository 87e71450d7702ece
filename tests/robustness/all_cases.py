"""Every robustness table, in the order of CASES.md."""

import tests.robustness.api_cases as api_cases
import tests.robustness.cli_cases as cli_cases
import tests.robustness.fault_cases as fault_cases
import tests.robustness.file_cases as file_cases
import tests.robustness.ref_cases as ref_cases
import tests.robustness.savedmodel_cases as savedmodel_cases

ALL_CASES = (
    api_cases.CASES
    + savedmodel_cases.CASES
    + cli_cases.CASES
    + file_cases.CASES
    + fault_cases.CASES
    + ref_cases.CASES
)
RUNNABLE = [case for case in ALL_CASES if case.run is not None]
