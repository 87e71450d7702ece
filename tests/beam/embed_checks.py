"""Checks of a Beam `embed` output against the `corpus` fixture: every
line once, the reference's vectors and tokens, the manifest's counts;
and the flags of the 2-worker FnApiRunner the tests run.
"""

import os

import h5py
import numpy as np

from keras_elmo.embedding.embedding_records import iter_records
from keras_elmo.embedding.embedding_records import read_manifest
from tests.cpu_rounding import on_cpu

TWO_WORKERS = [
    "--runner",
    "FnApiRunner",
    "--direct_num_workers=2",
    "--direct_running_mode=multi_threading",
]


# A Beam run batches a sentence with other sentences than the in-process
# reference does. On CPUs whose float32 matmul kernels round a row by the
# row count (docs/EXACTNESS.md, benchmarks/results/batch_rounding.json)
# that moves the random `tiny` model's vectors by up to 1.4e-6 of their
# largest value on an AVX2-only AMD EPYC (within 1e-6 on AVX-512 CPUs;
# tests/cpu_rounding.py); a lost, repeated or mismatched line is off by
# orders of magnitude more.
BATCH_ROUNDING = on_cpu(1e-6, 5e-6)


def relative_error(got, want):
    """Max |got - want| over the sentence's max |want|: the measure of
    tests/export/batch_independence_test.py (float32 matmuls round
    differently for other batch shapes)."""
    if want.size == 0:
        return 0.0
    scale = max(float(np.abs(want).max()), 1e-12)
    return float(np.abs(got - want).max()) / scale


def expected_counts(lines):
    """The manifest counts re-derived from the raw bytes."""
    every = [raw for file_lines in lines.values() for raw in file_lines]
    tokens = [raw.decode("utf-8", "surrogateescape").split() for raw in every]

    def valid(raw):
        try:
            raw.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    return {
        "lines": len(every),
        "tokens": sum(map(len, tokens)),
        "embedded_tokens": sum(map(len, tokens)),
        "blank_lines": sum(not t for t in tokens),
        "not_utf8_lines": sum(not valid(raw) for raw in every),
        "truncated_lines": 0,
    }


def check_output(corpus, output, mode="all"):
    """Every input line once, with the reference's vectors and tokens."""
    manifest = read_manifest(output)
    counts = expected_counts(corpus["lines"])
    assert counts["blank_lines"] == 2 and counts["not_utf8_lines"] == 1
    assert {k: manifest["counts"][k] for k in counts} == counts
    assert manifest["counts"]["shards"] == len(manifest["shards"])
    assert sorted(os.listdir(output)) == sorted(
        manifest["shards"] + ["manifest.json"]
    )
    assert manifest["files"] == {
        path: len(lines) for path, lines in corpus["lines"].items()
    }
    seen = set()
    with h5py.File(corpus["reference"], "r") as ref:
        for record in iter_records(output):
            key = (record["file"], record["line"])
            assert key not in seen, key
            seen.add(key)
            raw = corpus["lines"][key[0]][key[1]]
            line = raw.decode("utf-8", "surrogateescape").removeprefix("\ufeff")
            assert record["sentence"] == line.strip().encode(
                "utf-8", "surrogateescape"
            )
            assert record["tokens"] == [
                t.encode("utf-8", "surrogateescape") for t in line.split()
            ]
            want = ref[str(corpus["offsets"][key[0]] + key[1])][()]
            if mode == "top":
                want = want[-1]
            elif mode == "average":
                want = want.mean(axis=0)
            got = record["vectors"]
            assert got.shape == want.shape, key
            if got.dtype == np.float16:  # rounding to half precision
                bound = np.maximum(np.abs(want) * 2.0**-11, 2.0**-25)
                assert (
                    np.abs(got.astype(np.float32) - want) <= bound + 1e-6
                ).all()
            else:
                assert got.dtype == np.float32
                assert relative_error(got, want) <= BATCH_ROUNDING, key
    assert len(seen) == counts["lines"]
    return manifest


def corpus_size(corpus):
    return sum(len(lines) for lines in corpus["lines"].values())
