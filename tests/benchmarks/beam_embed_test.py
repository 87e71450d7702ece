"""benchmarks/beam_embed.py: the side-by-side pair's shares, a command
run end to end, and the per-worker arithmetic (the Beam modes themselves
run in tests/beam/)."""

import pytest

from tests.benchmarks.scripts import load_benchmark


@pytest.fixture(scope="module")
def script():
    return load_benchmark("beam_embed")


def test_shares_interleave_every_line_once(script, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(b"a\nbb b\n\nccc\nd d d d\n")
    paths = script.shares(str(src), 2)
    assert [open(p, "rb").read() for p in paths] == [
        b"a\n\nd d d d\n",
        b"bb b\nccc\n",
    ]


def test_pair_runs_two_pinned_commands_on_the_shares(script, tmp_path):
    src = tmp_path / "in.txt"
    src.write_bytes(b"one two\nthree\n")
    argvs = [
        script.command("embed", f"{src}.share{i}", "o", "p", 8, core=i)
        for i in range(2)
    ]
    assert [a[:3] for a in argvs] == [
        ["taskset", "-c", "0"],
        ["taskset", "-c", "1"],
    ]
    assert argvs[1][-8:] == [
        f"{src}.share1",
        "o",
        "--top",
        "--force",
        "--preset",
        "p",
        "--batch-size",
        "8",
    ]


def test_per_worker_divides_the_pairs_rate_per_process(script):
    modes = {
        "embed": {"sentences_per_s_steady": 400.0},
        "embed-1-core": {"sentences_per_s_steady": 300.0},
        "embed-2-processes": {"sentences_per_s_steady": 500.0},
        "beam-2-processes": {"sentences_per_s_steady": 420.0},
    }
    assert script.per_worker(modes) == {
        "beam-2-processes": {
            "sentences_per_s_steady_per_worker": 210.0,
            "vs_embed-1-core": 0.7,
            "vs_embed-2-processes": 0.84,
            "vs_embed": 0.525,
        }
    }


@pytest.mark.large
def test_a_failing_command_raises_with_its_error(script, tmp_path):
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(RuntimeError, match="embed-1-core failed"):
        script.run("embed-1-core", missing, str(tmp_path / "o.hdf5"), "x", 8)
