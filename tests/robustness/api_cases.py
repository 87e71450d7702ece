"""Cases over the Python API: batch_to_ids, CharacterIds, BiLM, ElmoLayer.

The rows live in `api_text_cases` (batch_to_ids, CharacterIds) and
`api_model_cases` (BiLM, ElmoLayer); numbered here, in that order.
"""

from tests.robustness import api_model_cases
from tests.robustness import api_text_cases
from tests.robustness.case_table import number

CASES = number("API", api_text_cases.ROWS + api_model_cases.ROWS)
