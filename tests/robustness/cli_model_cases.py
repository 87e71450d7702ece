"""CLI cases of the commands that read or write a whole model: `demo`,
`convert` and `export`.
"""

from tests.robustness.case_table import error
from tests.robustness.case_table import ok
from tests.robustness.cli_case_helpers import MISSING
from tests.robustness.cli_case_helpers import CommandFailed
from tests.robustness.cli_case_helpers import corrupt
from tests.robustness.cli_case_helpers import failing
from tests.robustness.cli_case_helpers import not_utf8
from tests.robustness.cli_case_helpers import options
from tests.robustness.cli_case_helpers import out_path
from tests.robustness.cli_case_helpers import refuses_overwrite
from tests.robustness.cli_case_helpers import weights

CHAR_IDS_SHAPE = "char ids: ({}, {}, 50)"


# === demo ===


def demo_shapes(sentence, rows, steps):
    def run(fx):
        code, out, err = fx("cli")("demo", "--random-weights", "tiny", sentence)
        assert code == 0, err
        assert CHAR_IDS_SHAPE.format(rows, steps) in out
        assert f"lstm_outputs2: ({rows}, {steps}, 32) float32" in out

    return run


DEMO_ROWS = [
    ok(
        "demo",
        'empty sentence `""`',
        "char ids (1, 0, 50), outputs (1, 0, D)",
        demo_shapes("", 1, 0),
    ),
    ok(
        "demo",
        "whitespace-only sentence",
        "char ids (1, 0, 50)",
        demo_shapes(" \t ", 1, 0),
    ),
    ok(
        "demo",
        "mixed scripts and emoji",
        "4 tokens: (1, 4, 50)",
        demo_shapes("héllo 世界 🎉 مرحبا", 1, 4),
    ),
    error(
        "demo",
        "`--preset nope`",
        CommandFailed,
        ["`--preset`", "'tiny'", "got 'nope'"],
        failing("demo", "--preset", "nope"),
    ),
    error(
        "demo",
        "`--options` of a missing file",
        CommandFailed,
        ["Options file", MISSING, "not found"],
        failing("demo", "--options", out_path(MISSING), "--weights", weights),
    ),
    error(
        "demo",
        "`--options` without `--weights`",
        CommandFailed,
        ["`--options` and `--weights` go together", "--weights=None"],
        failing("demo", "--options", options),
    ),
]


CONVERT_ROWS = [
    error(
        "convert",
        "`--weights` of random bytes",
        CommandFailed,
        ["Weights file", "corrupt.bin", "is not an HDF5 file"],
        failing(
            "convert",
            "--options",
            options,
            "--weights",
            corrupt,
            "--to-keras",
            out_path("m.keras"),
        ),
    ),
    error(
        "convert",
        "`--options` that is not UTF-8",
        CommandFailed,
        ["Options file", "latin1.json", "not UTF-8", "at byte 13"],
        failing(
            "convert",
            "--options",
            not_utf8,
            "--weights",
            weights,
            "--to-keras",
            out_path("m.keras"),
        ),
    ),
    error(
        "convert",
        "`--from-keras` of a non-.keras file",
        CommandFailed,
        ["`--from-keras`", "corrupt.bin", "not a .keras file"],
        failing(
            "convert",
            "--from-keras",
            corrupt,
            "--to-keras",
            out_path("m.keras"),
        ),
    ),
    error(
        "convert",
        "no input",
        CommandFailed,
        ["`--options O --weights W`", "`--from-keras", "received none"],
        failing("convert", "--to-keras", out_path("m.keras")),
    ),
    error(
        "convert",
        "`--to-options` without `--to-weights`",
        CommandFailed,
        ["`--to-options` and `--to-weights` go together"],
        failing(
            "convert",
            "--options",
            options,
            "--weights",
            weights,
            "--to-options",
            out_path("o.json"),
        ),
    ),
    error(
        "convert",
        "existing `--to-weights`, no `--force`",
        CommandFailed,
        ["Output", "w.hdf5", "exists", "--force"],
        refuses_overwrite(
            "convert",
            "--options",
            options,
            "--weights",
            weights,
            "--to-options",
            out_path("o.json"),
            "--to-weights",
            out_path("w.hdf5"),
            target=out_path("w.hdf5"),
        ),
    ),
]


EXPORT_ROWS = [
    error(
        "export",
        "`--version 0`",
        CommandFailed,
        ["`--version`", "positive integer", "got 0"],
        failing(
            "export",
            "--random-weights",
            "tiny",
            "--out",
            out_path("sm"),
            "--version",
            "0",
        ),
    ),
    error(
        "export",
        "`--max-tokens -3`",
        CommandFailed,
        ["`--max-tokens`", "positive integer", "got -3"],
        failing(
            "export",
            "--options",
            options,
            "--weights",
            weights,
            "--out",
            out_path("sm"),
            "--max-tokens",
            "-3",
        ),
    ),
    error(
        "export",
        "`--max-tokens 0`",
        CommandFailed,
        ["`--max-tokens`", "positive integer", "got 0"],
        failing(
            "export",
            "--random-weights",
            "tiny",
            "--out",
            out_path("sm0"),
            "--max-tokens",
            "0",
        ),
    ),
    error(
        "export",
        "`--weights` of random bytes",
        CommandFailed,
        ["Weights file", "corrupt.bin", "is not an HDF5 file"],
        failing(
            "export",
            "--options",
            options,
            "--weights",
            corrupt,
            "--out",
            out_path("sm"),
        ),
    ),
]
