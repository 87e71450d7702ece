"""Cases over every `keras-elmo` command (run in-process through `main`).

An error row expects exit code 2 and a stderr naming the argument or
file, what was expected and what was received (`Error.kind` is
`SystemExit` for these rows only as a label: the runner below raises it
from the exit code).
"""

import json
import os

import h5py
import numpy as np

from tests.robustness.text_inputs import reference_ids
from tests.robustness.case_table import VOCAB
from tests.robustness.case_table import error
from tests.robustness.case_table import number
from tests.robustness.case_table import ok


class CommandFailed(Exception):
    """Raised by `failing` with the command's stderr as its message."""


def write(fx, name, data):
    path = fx("tmp_path") / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def failing(*argv_fn):
    """A run that expects exit code 2; raises CommandFailed(stderr)."""

    def run(fx):
        argv = [a(fx) if callable(a) else a for a in argv_fn]
        code, out, err = fx("cli")(*argv)
        assert code == 2, (code, out, err)
        raise CommandFailed(err)

    return run


def failing_train(*flags, out=None):
    """`train` on a one-line corpus with the fixture vocabulary into `out`
    (default: a fresh `run` directory), `flags` added; expects exit code
    2."""
    return failing(
        "train",
        "--train",
        lambda fx: write(fx, "c.txt", b"a b\n"),
        "--vocab",
        lambda fx: model_files(fx)["vocabulary"],
        "--config",
        "tiny",
        "--out",
        out or out_path("run"),
        *flags,
    )


def failing_evaluate(*flags):
    """`evaluate` of a whitespace-only file with the fixture model,
    `flags` added; expects exit code 2."""
    return failing(
        "evaluate",
        "--data",
        whitespace_file,
        "--model",
        lambda fx: fx("model_dir"),
        *flags,
    )


def model_files(fx):
    from keras_elmo.weights.model_files import model_paths

    return model_paths(fx("model_dir"))


def options(fx):
    return model_files(fx)["options"]


def weights(fx):
    return model_files(fx)["weights"]


def corrupt(fx):
    return write(fx, "corrupt.bin", bytes(range(256)) * 4)


def not_utf8(fx):
    return write(fx, "latin1.json", b'{"lstm": "caf\xe9"}')


def empty_file(fx):
    return write(fx, "empty.txt", b"")


def whitespace_file(fx):
    return write(fx, "blank.txt", b"  \n\t\n\r\n")


def lambda_keras(fx):
    import keras

    path = str(fx("tmp_path") / "lambda.keras")
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Lambda(lambda x: x * 2)]
    )
    model.save(path)
    return path


def out_path(name):
    return lambda fx: str(fx("tmp_path") / name)


def arg(text):
    return lambda fx: text


CHAR_IDS_SHAPE = "char ids: ({}, {}, 50)"

# === demo ===


def demo_shapes(sentence, rows, steps):
    def run(fx):
        code, out, err = fx("cli")("demo", "--random-weights", "tiny", sentence)
        assert code == 0, err
        assert CHAR_IDS_SHAPE.format(rows, steps) in out
        assert f"lstm_outputs2: ({rows}, {steps}, 32) float32" in out

    return run


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


def refuses_overwrite(*argv_fn, target):
    """The command refuses an existing `target` and leaves it unchanged."""

    def run(fx):
        path = target(fx)
        with open(path, "wb") as f:
            f.write(b"old contents")
        argv = [a(fx) if callable(a) else a for a in argv_fn]
        code, out, err = fx("cli")(*argv)
        with open(path, "rb") as f:
            assert f.read() == b"old contents"
        assert code == 2, (code, out, err)
        raise CommandFailed(err)

    return run


# === embed ===


def embed_matches_bilm(data, sentences, mode="all", flags=()):
    """Each line's dataset equals the BiLM on the line's byte tokens."""

    def run(fx):
        source = write(fx, "input.txt", data)
        out = str(fx("tmp_path") / "vectors.hdf5")
        code, _, err = fx("cli")(
            "embed",
            source,
            out,
            f"--{mode}",
            "--options",
            options(fx),
            "--weights",
            weights(fx),
            *flags,
        )
        assert code == 0, err
        bilm = fx("compiled_bilm")
        with h5py.File(out, "r") as f:
            index = json.loads(f["sentence_to_index"][0])
            assert {int(v) for v in index.values()} <= set(
                range(len(sentences))
            )
            assert len([k for k in f if k.isdigit()]) == len(sentences)
            for i, tokens in enumerate(sentences):
                ids = reference_ids([tokens]).reshape(1, len(tokens), 50)
                got = f[str(i)][...]
                expected = _layers(bilm(ids), mode)
                assert got.shape == expected.shape, (i, got.shape)
                np.testing.assert_allclose(got, expected, atol=1e-5)

    return run


def _layers(out, mode):
    word = np.asarray(out["word_emb"])[0]
    layers = np.stack(
        [
            np.concatenate([word, word], -1),
            np.asarray(out["lstm_outputs1"])[0],
            np.asarray(out["lstm_outputs2"])[0],
        ]
    )
    return {"all": layers, "top": layers[-1], "average": layers.mean(0)}[mode]


def embed_empty_file(fx):
    source = empty_file(fx)
    out = str(fx("tmp_path") / "empty.hdf5")
    code, _, err = fx("cli")(
        "embed", source, out, "--options", options(fx), "--weights", weights(fx)
    )
    assert code == 0, err
    with h5py.File(out, "r") as f:
        assert list(f) == ["sentence_to_index"]
        assert json.loads(f["sentence_to_index"][0]) == {}
    assert not os.path.exists(out + ".partial")


LONG_LINE = " ".join(f"w{i % 97}" for i in range(10_000))
MIXED_LINE = "héllo 世界 🎉 مرحبا 👩‍👩‍👧 a\u0301"


def tokens_of(line):
    return [t.encode("utf-8", "surrogateescape") for t in line.split()]


MISSING = "does-not-exist.txt"

CASES = number(
    "CLI",
    [
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
            failing(
                "demo", "--options", out_path(MISSING), "--weights", weights
            ),
        ),
        error(
            "demo",
            "`--options` without `--weights`",
            CommandFailed,
            ["`--options` and `--weights` go together", "--weights=None"],
            failing("demo", "--options", options),
        ),
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
                "--config",
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
                "--config",
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
                "--config",
                "tiny",
                "--out",
                out_path("run"),
            ),
        ),
        error(
            "train",
            "`--config nope`",
            CommandFailed,
            ["`--config`", "'tiny'", "options.json path", "got 'nope'"],
            failing(
                "train",
                "--train",
                whitespace_file,
                "--vocab",
                lambda fx: model_files(fx)["vocabulary"],
                "--config",
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
                "--config",
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
        ok(
            "embed",
            "empty input file",
            "only `sentence_to_index` = {}; no `.partial` left",
            embed_empty_file,
        ),
        ok(
            "embed",
            "whitespace-only lines",
            "empty `(3, 0, 32)` datasets",
            embed_matches_bilm(b"  \n\t\n", [[], []]),
        ),
        ok(
            "embed",
            "invalid UTF-8 and NUL bytes (`--max-invalid-fraction 1`: "
            "every line is invalid)",
            "raw bytes embedded: = the BiLM on NumPy re-derived ids",
            embed_matches_bilm(
                b"a \xff\xfe b\nc\x00d \xc3\n",
                [tokens_of("a \udcff\udcfe b"), [b"c\x00d", b"\xc3"]],
                flags=("--max-invalid-fraction", "1"),
            ),
        ),
        ok(
            "embed",
            "mixed scripts, emoji, a 1,000-byte token (`--average`)",
            "= the BiLM on the same tokens (48 bytes kept)",
            embed_matches_bilm(
                (MIXED_LINE + "\n" + "é" * 500 + " y\n").encode(),
                [tokens_of(MIXED_LINE), ["é".encode() * 500, b"y"]],
                "average",
            ),
        ),
        ok(
            "embed",
            "10,000-token line (`--top`)",
            "`(10000, 32)`, = the compiled BiLM (embed has no cap)",
            embed_matches_bilm(
                (LONG_LINE + "\n").encode(), [tokens_of(LONG_LINE)], "top"
            ),
        ),
        error(
            "embed",
            "`--batch-size 0`",
            CommandFailed,
            ["`--batch-size`", "positive integer", "got 0"],
            failing(
                "embed",
                whitespace_file,
                out_path("o.hdf5"),
                "--batch-size",
                "0",
            ),
        ),
        error(
            "embed",
            "missing input file",
            CommandFailed,
            ["Input file", MISSING, "not found"],
            failing("embed", out_path(MISSING), out_path("o.hdf5")),
        ),
    ],
)
