"""Fault cases of options.json values out of range, through `train` and
`BiLMConfig.from_options_json`.
"""

from tests.robustness.case_table import error
from tests.robustness.case_table import ref
from tests.robustness.cli_case_helpers import model_files
from tests.robustness.fault_case_helpers import TEXT
from tests.robustness.fault_case_helpers import cli_error
from tests.robustness.fault_case_helpers import corpus
from tests.robustness.fault_case_helpers import failing_keeps
from tests.robustness.fault_case_helpers import kept
from tests.robustness.file_case_helpers import edited_options
from tests.robustness.file_case_helpers import load_options
from tests.robustness.file_case_helpers import setter


def train_dim_minus_four(fx):
    """The issue's own example, through `train --architecture options.json`."""
    options = edited_options(setter("lstm", "dim", -4))(fx)
    return failing_keeps(
        "train",
        "--train",
        corpus("c.txt", TEXT.encode()),
        "--vocab",
        lambda fx: model_files(fx)["vocabulary"],
        "--architecture",
        options,
        "--out",
        lambda fx: str(fx("tmp_path") / "earlier"),
        keep=lambda fx: kept(fx, "notes.txt"),
    )(fx)


OPTIONS = "options.json"


ROWS = [
    cli_error(
        OPTIONS,
        '`"lstm": {"dim": -4}` through `train --architecture`',
        ["options.json", "`lstm.dim` is -4", "expected an integer >= 1"],
        train_dim_minus_four,
    ),
    error(
        OPTIONS,
        "`char_cnn.filters[1]` of width 60",
        ValueError,
        ["options.json", "`char_cnn.filters[1]` is [60, 8]", "<= 50"],
        load_options(
            edited_options(setter("char_cnn", "filters", [[1, 4], [60, 8]]))
        ),
    ),
    error(
        OPTIONS,
        "`char_cnn.activation` = `gelu`",
        ValueError,
        ["`char_cnn.activation` is 'gelu'", '"relu" or "tanh"'],
        load_options(edited_options(setter("char_cnn", "activation", "gelu"))),
    ),
    error(
        OPTIONS,
        "`lstm.cell_clip` = 0",
        ValueError,
        ["`lstm.cell_clip` is 0", "null (no clipping) or a number > 0"],
        load_options(edited_options(setter("lstm", "cell_clip", 0))),
    ),
    error(
        OPTIONS,
        "`char_cnn.n_highway` = -1",
        ValueError,
        ["`char_cnn.n_highway` is -1", "an integer >= 0"],
        load_options(edited_options(setter("char_cnn", "n_highway", -1))),
    ),
    ref(
        OPTIONS,
        "unknown key `lstm.n_layer`",
        "warning naming the key and `did you mean lstm.n_layers`",
        "tests/config/options_rules_test.py::"
        "test_unknown_key_warns_with_the_closest_known_key",
    ),
]
