"""Cases over files: weights HDF5, options JSON, vocabularies, softmax.

Each bad file gives an error naming the file, the dataset or key, and what
was wrong; nothing is assigned to the model before every check passes.

The rows live in `hdf5_file_cases` (weights, softmax) and
`text_file_cases` (options, vocabulary), their helpers in
`file_case_helpers`; numbered here.
"""

from tests.robustness import hdf5_file_cases
from tests.robustness import text_file_cases
from tests.robustness.case_table import number

CASES = number(
    "FILE",
    hdf5_file_cases.WEIGHTS_ROWS
    + text_file_cases.OPTIONS_ROWS
    + text_file_cases.VOCABULARY_ROWS
    + hdf5_file_cases.SOFTMAX_ROWS,
)
