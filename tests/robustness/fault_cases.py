"""Cases over the data users get wrong (issue 19): corpora in the wrong
encoding or not text at all, a foreign vocabulary, options.json values out
of range, and writes that fail for lack of space or permission.

A CLI error row expects exit code 2, a stderr naming the file (or key) and
the problem, and that an earlier output is byte-identical afterwards
(`keeps`); disk rows run in child processes and are covered by the tests
they cite.
"""

import gzip

from tests.robustness.case_table import VOCAB
from tests.robustness.case_table import error
from tests.robustness.case_table import number
from tests.robustness.case_table import ok
from tests.robustness.case_table import ref
from tests.robustness.cli_case_helpers import CommandFailed
from tests.robustness.cli_case_helpers import model_files
from tests.robustness.cli_case_helpers import write
from tests.robustness.file_case_helpers import edited_options
from tests.robustness.file_case_helpers import load_options
from tests.robustness.file_case_helpers import setter

OLD = b"earlier output, must survive"
TEXT = "the cat a b\nb a the cat\na cat\n"
LATIN1 = "the café a\nnaïve b a\nà la cat\n".encode("cp1252")
RANDOM = bytes((i * 7919 + 13) % 256 for i in range(3000))
FOREIGN = "der Hund bellt\ndie Katze schläft a\n".encode()


def cli_error(surface, input, names, run):
    """An error row of a command: exit 2, stderr naming `names`, and the
    earlier output byte-identical."""
    return error(surface, input, CommandFailed, names, run, why=KEPT)


KEPT = "exit 2; the earlier output byte-identical"


def corpus(name, data):
    return lambda fx: write(fx, name, data)


def kept(fx, name):
    """A file holding `OLD`: the earlier output a failing run must keep."""
    path = fx("tmp_path") / "earlier" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(OLD)
    return str(path)


def failing_keeps(command, *argv_fn, keep):
    """Runs `keras-elmo COMMAND ARGV` (a callable arg is called with `fx`;
    `keep(fx)` gives the earlier output), expects exit code 2 and the
    earlier output byte-identical; raises CommandFailed(stderr)."""

    def run(fx):
        target = keep(fx)
        argv = [a(fx) if callable(a) else a for a in argv_fn]
        code, out, err = fx("cli")(command, *argv)
        with open(target, "rb") as f:
            assert f.read() == OLD, "an earlier output was changed"
        assert code == 2, (code, out, err)
        raise CommandFailed(err)

    return run


def train_on(train, *flags, valid=None):
    """`train` into a fresh OUT that already holds a file of ours."""
    extra = ("--valid", valid) if valid else ()
    return failing_keeps(
        "train",
        "--train",
        train,
        *extra,
        "--vocab",
        lambda fx: model_files(fx)["vocabulary"],
        "--config",
        "tiny",
        "--out",
        lambda fx: str(fx("tmp_path") / "earlier"),
        *flags,
        keep=lambda fx: kept(fx, "notes.txt"),
    )


def vocab_of(data):
    keep = lambda fx: kept(fx, "vocab.txt")  # noqa: E731
    return failing_keeps(
        "vocab", corpus("c.txt", data), "-o", keep, "--force", keep=keep
    )


def evaluate_on(data):
    return failing_keeps(
        "evaluate",
        "--data",
        corpus("held_out.txt", data),
        "--model",
        lambda fx: fx("model_dir"),
        "--results",
        lambda fx: kept(fx, "results.json"),
        keep=lambda fx: kept(fx, "results.json"),
    )


def embed_of(data):
    keep = lambda fx: kept(fx, "vectors.hdf5")  # noqa: E731
    return failing_keeps(
        "embed",
        corpus("input.txt", data),
        keep,
        "--force",
        "--model",
        lambda fx: fx("model_dir"),
        keep=keep,
    )


def vocab_of_windows_text(fx):
    """CRLF line ends and a UTF-8 byte-order mark: the same vocabulary as
    the plain file, and the same health summary."""
    cli, outputs = fx("cli"), []
    for name, data in (
        ("plain.txt", TEXT.encode()),
        ("windows.txt", b"\xef\xbb\xbf" + TEXT.replace("\n", "\r\n").encode()),
    ):
        out = str(fx("tmp_path") / f"{name}.vocab")
        path = write(fx, name, data)
        code, _, err = cli("vocab", path, "-o", out)
        assert code == 0, err
        summary = [
            line.replace(path, "FILE")
            for line in err.splitlines()
            if line.startswith("corpus check")
        ]
        with open(out, "rb") as f:
            outputs.append((f.read(), summary))
    assert outputs[0] == outputs[1]
    assert outputs[0][1][0] == (
        "corpus check CORPUS_GLOB: FILE: 3 lines read, 3 kept, 10 tokens"
    )
    assert outputs[0][0].split(b"\n")[3:7] == [b"a", b"cat", b"b", b"the"]


def train_dim_minus_four(fx):
    """The issue's own example, through `train --config options.json`."""
    options = edited_options(setter("lstm", "dim", -4))(fx)
    return failing_keeps(
        "train",
        "--train",
        corpus("c.txt", TEXT.encode()),
        "--vocab",
        lambda fx: model_files(fx)["vocabulary"],
        "--config",
        options,
        "--out",
        lambda fx: str(fx("tmp_path") / "earlier"),
        keep=lambda fx: kept(fx, "notes.txt"),
    )(fx)


CORPUS = "corpus check"
OPTIONS = "options.json"
DISK = "disk / permissions"
DISK_TEST = "tests/robustness/disk_fault_test.py"
WRITE_TEST = "tests/robustness/write_faults_test.py"
HEALTH_TEST = "tests/data/corpus_health_test.py"
UTF8_ERR = "not valid UTF-8"
assert VOCAB[3] == "a"  # the fixture vocabulary the corpora use

CASES = number(
    "FAULT",
    [
        cli_error(
            f"train {CORPUS}",
            "`--train` of random bytes",
            ["random.bin", UTF8_ERR, "first at line 1", "binary data"],
            train_on(corpus("random.bin", RANDOM)),
        ),
        cli_error(
            f"train {CORPUS}",
            "UTF-16 text with a byte-order mark",
            ["u16.txt", "UTF-16 little-endian", "iconv -f UTF-16 -t UTF-8"],
            train_on(corpus("u16.txt", TEXT.encode("utf-16"))),
        ),
        cli_error(
            f"train {CORPUS}",
            "UTF-16LE text without a byte-order mark",
            ["u16le.txt", "UTF-16LE", "every other byte is NUL"],
            train_on(corpus("u16le.txt", TEXT.encode("utf-16-le"))),
        ),
        cli_error(
            f"train {CORPUS}",
            "Latin-1 / Windows-1252 text",
            [
                "latin.txt",
                "3 of its 3 non-blank lines",
                "first at line 1",
                "iconv -f WINDOWS-1252 -t UTF-8",
            ],
            train_on(corpus("latin.txt", LATIN1)),
        ),
        cli_error(
            f"train {CORPUS}",
            "a file of NUL bytes",
            ["zeros.txt", "bytes are NUL", "--max-nul-fraction 0.1"],
            train_on(corpus("zeros.txt", b"a b\n" + bytes(500))),
        ),
        cli_error(
            f"train {CORPUS}",
            "classic Mac `\\r` line ends",
            ["mac.txt", "classic Mac", "tr '\\r' '\\n'"],
            train_on(corpus("mac.txt", TEXT.replace("\n", "\r").encode())),
        ),
        cli_error(
            f"train {CORPUS}",
            "gzip data in a file not named .gz",
            ["packed.txt", "gzip-compressed data", "rename it"],
            train_on(corpus("packed.txt", gzip.compress(TEXT.encode()))),
        ),
        cli_error(
            f"train {CORPUS}",
            "a `.gz` file that is not gzip",
            ["fake.txt.gz", "is named .gz but is not readable gzip"],
            train_on(corpus("fake.txt.gz", TEXT.encode())),
        ),
        cli_error(
            f"train {CORPUS}",
            "vocabulary of another corpus (German text, English vocabulary)",
            [
                "german.txt",
                "6 of its 7 tokens (85.7%) are not in the vocabulary",
                "--max-oov-rate 0.5",
            ],
            train_on(corpus("german.txt", FOREIGN)),
        ),
        cli_error(
            f"train {CORPUS}",
            "`--valid` in UTF-16",
            ["valid16.txt", "UTF-16 little-endian"],
            train_on(
                corpus("c.txt", TEXT.encode()),
                valid=corpus("valid16.txt", TEXT.encode("utf-16")),
            ),
        ),
        cli_error(
            f"train {CORPUS}",
            "only blank and non-UTF-8 lines (`--max-invalid-fraction 1`)",
            ["`--train`", "blank.txt", "holds no sentence", "3 lines"],
            train_on(
                corpus("blank.txt", b"\n \t\nx \xff y\n"),
                "--max-invalid-fraction",
                "1",
            ),
        ),
        cli_error(
            f"train {CORPUS}",
            "`--max-oov-rate 2`",
            ["`--max-oov-rate`", "fraction in [0, 1]", "got 2.0"],
            train_on(corpus("c.txt", TEXT.encode()), "--max-oov-rate", "2"),
        ),
        ok(
            f"vocab {CORPUS}",
            "CRLF line ends and a UTF-8 byte-order mark",
            "the same vocabulary file and health summary as the plain file",
            vocab_of_windows_text,
        ),
        cli_error(
            f"vocab {CORPUS}",
            "UTF-16 corpus, existing `-o` with `--force`",
            ["c.txt", "UTF-16 little-endian", "iconv"],
            vocab_of(TEXT.encode("utf-16")),
        ),
        cli_error(
            f"vocab {CORPUS}",
            "random bytes corpus",
            ["c.txt", UTF8_ERR, "binary data"],
            vocab_of(RANDOM),
        ),
        cli_error(
            f"evaluate {CORPUS}",
            "Latin-1 `--data`",
            ["held_out.txt", UTF8_ERR, "Latin-1 / Windows-1252"],
            evaluate_on(LATIN1),
        ),
        cli_error(
            f"evaluate {CORPUS}",
            "`--data` foreign to the model's vocabulary",
            ["held_out.txt", "not in the vocabulary", "does not belong"],
            evaluate_on(FOREIGN),
        ),
        cli_error(
            f"embed {CORPUS}",
            "UTF-16 input, existing output with `--force`",
            ["input.txt", "UTF-16 little-endian", "iconv"],
            embed_of(TEXT.encode("utf-16")),
        ),
        cli_error(
            f"embed {CORPUS}",
            "random bytes input",
            ["input.txt", UTF8_ERR, "binary data"],
            embed_of(RANDOM),
        ),
        ref(
            CORPUS,
            "CRLF and a byte-order mark, in graph",
            "the same training batches as the plain file",
            f"{HEALTH_TEST}::test_crlf_and_utf8_bom_read_as_the_plain_file",
        ),
        ref(
            CORPUS,
            "a clean corpus, with and without the check",
            "health summary printed; bit-identical weights with "
            "`--deterministic`",
            "tests/training/corpus_check_train_test.py::"
            "test_checked_training_prints_health_and_matches_unchecked",
        ),
        ref(
            CORPUS,
            "only blank and non-UTF-8 lines",
            "CorpusError naming the flag and `holds no sentence`",
            f"{HEALTH_TEST}::test_nothing_usable_left",
        ),
        cli_error(
            OPTIONS,
            '`"lstm": {"dim": -4}` through `train --config`',
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
            load_options(
                edited_options(setter("char_cnn", "activation", "gelu"))
            ),
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
        ref(
            DISK,
            "checkpoint: file size limit, then a read-only directory, then "
            "space again",
            "exit 2 naming the checkpoint and the intact previous one; "
            "files byte-identical, no temporaries; the rerun resumes",
            f"{DISK_TEST}::"
            "test_checkpoint_faults_keep_the_last_checkpoint_and_resume",
        ),
        ref(
            DISK,
            "vocab `-o`: file size limit, read-only directory",
            "exit 2 naming the file; the old file unchanged; rerun writes it",
            f"{DISK_TEST}::test_vocab_write_faults_keep_the_old_file",
        ),
        ref(
            DISK,
            "embed: file size limit mid-run",
            "exit 2 naming OUTPUT.partial; OUTPUT unchanged; `--resume` "
            "completes, = an uninterrupted run",
            f"{DISK_TEST}::test_embed_faults_keep_the_old_output_and_resume",
        ),
        ref(
            DISK,
            "export `--force`: file size limit",
            "exit 2 naming the directory; the old SavedModel byte-identical",
            f"{DISK_TEST}::test_export_faults_keep_the_old_saved_model",
        ),
        ref(
            DISK,
            "any atomic write (weights, options, softmax, vocab, .keras, "
            "results): ENOSPC, EFBIG, EACCES",
            "WriteFailed naming the destination; the old file unchanged",
            f"{WRITE_TEST}::"
            "test_atomic_write_fault_names_the_path_and_keeps_the_old_file",
        ),
    ],
)
