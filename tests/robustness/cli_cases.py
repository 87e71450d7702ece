"""Cases over every `keras-elmo` command (run in-process through `main`).

An error row expects exit code 2 and a stderr naming the argument or
file, what was expected and what was received (`Error.kind` is
`SystemExit` for these rows only as a label: the runner in
`cli_case_helpers` raises it from the exit code).

The rows live in `cli_model_cases` (demo, convert, export),
`cli_corpus_cases` (train, evaluate, vocab) and `cli_embed_cases`,
their helpers in `cli_case_helpers`; numbered here in command order.
"""

from tests.robustness import cli_corpus_cases
from tests.robustness import cli_embed_cases
from tests.robustness import cli_model_cases
from tests.robustness.case_table import number

CASES = number(
    "CLI",
    cli_model_cases.DEMO_ROWS
    + cli_model_cases.CONVERT_ROWS
    + cli_corpus_cases.TRAIN_ROWS
    + cli_corpus_cases.EVALUATE_ROWS
    + cli_corpus_cases.VOCAB_ROWS
    + cli_model_cases.EXPORT_ROWS
    + cli_embed_cases.EMBED_ROWS,
)
