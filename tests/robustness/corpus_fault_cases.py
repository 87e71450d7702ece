"""Fault cases of the corpus check: corpora in the wrong encoding or not
text at all, and a vocabulary of another corpus, through `train`,
`vocab`, `evaluate` and `embed`.
"""

import gzip

from tests.robustness.case_table import VOCAB
from tests.robustness.case_table import ok
from tests.robustness.case_table import ref
from tests.robustness.cli_case_helpers import model_files
from tests.robustness.cli_case_helpers import write
from tests.robustness.fault_case_helpers import FOREIGN
from tests.robustness.fault_case_helpers import LATIN1
from tests.robustness.fault_case_helpers import RANDOM
from tests.robustness.fault_case_helpers import TEXT
from tests.robustness.fault_case_helpers import cli_error
from tests.robustness.fault_case_helpers import corpus
from tests.robustness.fault_case_helpers import failing_keeps
from tests.robustness.fault_case_helpers import kept


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
        "--architecture",
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


CORPUS = "corpus check"
HEALTH_TEST = "tests/data/corpus_health_test.py"
UTF8_ERR = "not valid UTF-8"
assert VOCAB[3] == "a"  # the fixture vocabulary the corpora use


ROWS = [
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
        "health summary printed; bit-identical weights with `--deterministic`",
        "tests/training/corpus_check_train_test.py::"
        "test_checked_training_prints_health_and_matches_unchecked",
    ),
    ref(
        CORPUS,
        "only blank and non-UTF-8 lines",
        "CorpusError naming the flag and `holds no sentence`",
        f"{HEALTH_TEST}::test_nothing_usable_left",
    ),
]
