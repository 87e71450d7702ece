"""Flags only a Beam run reads are refused without `--runner`, by name,
before any work (in-process and Spark runs alike): never silently ignored."""

import pytest

from keras_elmo.cli._embed_beam import BEAM_ONLY_FLAGS
from keras_elmo.cli.main import main

CASES = {
    "batch_tokens": ("--batch-tokens", "300"),
    "num_shards": ("--num-shards", "2"),
    "batching": ("--batching", "length-keys"),
    "worker_threads": ("--worker-threads", "1"),
}


def test_every_beam_only_flag_has_a_case():
    assert set(CASES) == set(BEAM_ONLY_FLAGS)


@pytest.mark.parametrize("spark", [False, True], ids=["in-process", "spark"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_beam_only_flag_without_a_runner_is_refused(
    tmp_path, capsys, name, spark
):
    flag, value = CASES[name]
    src = tmp_path / "in.txt"
    src.write_text("a b\n")
    out = tmp_path / "o.hdf5"
    argv = ["embed", str(src), str(out), flag, value]
    if spark:
        argv += ["--spark-master", "local[1]"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"`{flag}`" in err and "needs --runner" in err, err
    assert f"received {flag} {value} without it" in err, err
    assert not out.exists()
    assert not list(tmp_path.glob("o.hdf5*"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_beam_only_flag_at_its_default_is_accepted(name):
    from argparse import Namespace

    from keras_elmo.cli._embed_beam import refuse_beam_only_flags

    default = BEAM_ONLY_FLAGS[name][0]
    refuse_beam_only_flags(Namespace(**{name: default}))
