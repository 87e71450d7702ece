"""CLI cases of the commands that read a corpus: `train`, `evaluate` and
`vocab`.
"""

import json

import numpy as np

from tests.robustness.case_table import VOCAB
from tests.robustness.case_table import error
from tests.robustness.case_table import ok
from tests.robustness.cli_case_helpers import CommandFailed
from tests.robustness.cli_case_helpers import corrupt
from tests.robustness.cli_case_helpers import empty_file
from tests.robustness.cli_case_helpers import failing
from tests.robustness.cli_case_helpers import failing_evaluate
from tests.robustness.cli_case_helpers import failing_train
from tests.robustness.cli_case_helpers import model_files
from tests.robustness.cli_case_helpers import out_path
from tests.robustness.cli_case_helpers import refuses_overwrite
from tests.robustness.cli_case_helpers import whitespace_file
from tests.robustness.cli_case_helpers import write

# === evaluate ===


def evaluate_skips_bad_lines(fx):
    """Malformed and blank lines are skipped: the result equals the same
    file without them."""
    cli, model = fx("cli"), fx("model_dir")
    dirty = write(fx, "dirty.txt", b"a \xff b\nc\x00d a\n\n  \nthe cat\n")
    clean = write(fx, "clean.txt", b"c\x00d a\nthe cat\n")
    results = []
    for path in (dirty, clean):
        code, out, err = cli(
            "evaluate", "--data", path, "--model", model, "--json"
        )
        assert code == 0, err
        results.append(json.loads(out))
    assert results[0] == results[1]
    assert results[0]["tokens"] == 6  # (2 + 1) + (2 + 1) per direction
    assert np.isfinite(results[0]["perplexity"])


# === vocab ===


def vocab_writes(data, tokens):
    def run(fx):
        corpus = write(fx, "corpus.txt", data)
        out = str(fx("tmp_path") / "vocab.txt")
        code, _, err = fx("cli")("vocab", corpus, "-o", out, "--min-count", "1")
        assert code == 0, err
        with open(out, "rb") as f:
            expected = "".join(t + "\n" for t in VOCAB[:3] + tokens)
            assert f.read() == expected.encode("utf-8")

    return run


TRAIN_ROWS = [
    error(
        "train",
        "empty `--train` file",
        CommandFailed,
        ["`--train`", "empty.txt", "holds no sentence"],
        failing(
            "train",
            "--train",
            empty_file,
            "--vocab",
            lambda fx: model_files(fx)["vocabulary"],
            "--architecture",
            "tiny",
            "--out",
            out_path("run"),
        ),
    ),
    error(
        "train",
        "whitespace-only `--train` file",
        CommandFailed,
        ["`--train`", "blank.txt", "holds no sentence"],
        failing(
            "train",
            "--train",
            whitespace_file,
            "--vocab",
            lambda fx: model_files(fx)["vocabulary"],
            "--architecture",
            "tiny",
            "--out",
            out_path("run"),
        ),
    ),
    error(
        "train",
        "`--train` glob matching nothing",
        CommandFailed,
        ["`file_pattern`", "nothing-*.txt", "matches no file"],
        failing(
            "train",
            "--train",
            out_path("nothing-*.txt"),
            "--vocab",
            lambda fx: model_files(fx)["vocabulary"],
            "--architecture",
            "tiny",
            "--out",
            out_path("run"),
        ),
    ),
    error(
        "train",
        "`--architecture nope`",
        CommandFailed,
        [
            "`--architecture`",
            "'2x1024_128_512cnn_1xhighway'",
            "'tiny'",
            "options.json path",
            "got 'nope'",
        ],
        failing(
            "train",
            "--train",
            whitespace_file,
            "--vocab",
            lambda fx: model_files(fx)["vocabulary"],
            "--architecture",
            "nope",
            "--out",
            out_path("run"),
        ),
    ),
    error(
        "train",
        "`--batch-size 0`",
        CommandFailed,
        ["`--batch-size`", "positive integer", "got 0"],
        failing_train("--batch-size", "0"),
    ),
    error(
        "train",
        "`--lr-decay 1.5`",
        CommandFailed,
        ["`--lr-decay`", "factor in (0, 1]", "got 1.5"],
        failing_train("--lr-decay", "1.5"),
    ),
    error(
        "train",
        "`--lr-decay-start 0`",
        CommandFailed,
        ["`--lr-decay-start`", "positive integer", "got 0"],
        failing_train("--lr-decay-start", "0"),
    ),
    error(
        "train",
        "`--vocab` of random bytes",
        CommandFailed,
        [
            "Vocabulary file",
            "corrupt.bin",
            "line 1",
            "first three lines must be",
        ],
        failing(
            "train",
            "--train",
            lambda fx: write(fx, "c.txt", b"a b\n"),
            "--vocab",
            corrupt,
            "--architecture",
            "tiny",
            "--out",
            out_path("run"),
        ),
    ),
    error(
        "train",
        "`--out` holding a finished model and no checkpoint",
        CommandFailed,
        ["`--out`", "weights.hdf5", "no checkpoint", "--force"],
        failing_train(out=lambda fx: fx("model_dir")),
    ),
]


EVALUATE_ROWS = [
    ok(
        "evaluate",
        "invalid UTF-8, NUL, blank and whitespace lines",
        "= the same file without the skipped lines; 6 predictions",
        evaluate_skips_bad_lines,
    ),
    error(
        "evaluate",
        "empty `--data` file",
        CommandFailed,
        ["`--data`", "empty.txt", "holds no sentences"],
        failing(
            "evaluate",
            "--data",
            empty_file,
            "--model",
            lambda fx: fx("model_dir"),
        ),
    ),
    error(
        "evaluate",
        "`--model` that is not a model directory",
        CommandFailed,
        [
            "`--model`",
            "matches no known format",
            "options.json + weights.hdf5",
        ],
        failing(
            "evaluate",
            "--data",
            whitespace_file,
            "--model",
            lambda fx: str(fx("tmp_path")),
        ),
    ),
    error(
        "evaluate",
        "`--batch-size 0`",
        CommandFailed,
        ["`--batch-size`", "positive integer", "got 0"],
        failing_evaluate("--batch-size", "0"),
    ),
    error(
        "evaluate",
        "`--stream --batch-size 0`",
        CommandFailed,
        ["`--batch-size`", "positive integer", "got 0"],
        failing_evaluate("--stream", "--batch-size", "0"),
    ),
    error(
        "evaluate",
        "`--max-tokens -1`",
        CommandFailed,
        ["`--max-tokens`", "positive integer", "got -1"],
        failing_evaluate("--max-tokens", "-1"),
    ),
]


VOCAB_ROWS = [
    ok(
        "vocab",
        "empty corpus",
        "only `<S>`, `</S>`, `<UNK>`",
        vocab_writes(b"", []),
    ),
    ok(
        "vocab",
        "invalid UTF-8 line, NUL bytes, mixed scripts, emoji",
        "the malformed line skipped; NUL kept in its token; count "
        "then code-point order",
        vocab_writes(
            "b a \udcff\nc\x00d a\n\n世 🎉 a\n".encode(
                "utf-8", "surrogateescape"
            ),
            ["a", "c\x00d", "世", "🎉"],
        ),
    ),
    error(
        "vocab",
        "`--min-count 0`",
        CommandFailed,
        ["`--min-count`", "positive integer", "got 0"],
        failing(
            "vocab", empty_file, "-o", out_path("v.txt"), "--min-count", "0"
        ),
    ),
    error(
        "vocab",
        "existing `-o`, no `--force`",
        CommandFailed,
        ["Output", "v.txt", "exists", "--force"],
        refuses_overwrite(
            "vocab",
            empty_file,
            "-o",
            out_path("v.txt"),
            target=out_path("v.txt"),
        ),
    ),
]
