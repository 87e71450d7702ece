"""CLI cases of `embed`: awkward input lines give what the BiLM gives on
the same byte tokens (NumPy re-derived char ids).
"""

import json
import os

import h5py
import numpy as np

from tests.robustness.case_table import error
from tests.robustness.case_table import ok
from tests.robustness.cli_case_helpers import MISSING
from tests.robustness.cli_case_helpers import CommandFailed
from tests.robustness.cli_case_helpers import empty_file
from tests.robustness.cli_case_helpers import failing
from tests.robustness.cli_case_helpers import options
from tests.robustness.cli_case_helpers import out_path
from tests.robustness.cli_case_helpers import weights
from tests.robustness.cli_case_helpers import whitespace_file
from tests.robustness.cli_case_helpers import write
from tests.robustness.text_inputs import reference_ids

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


EMBED_ROWS = [
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
]
