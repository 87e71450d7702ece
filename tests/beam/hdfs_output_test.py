"""`keras-elmo embed --runner` on `hdfs://` input and output, the form
docs/BEAM.md gives for Flink, against a WebHDFS endpoint on 127.0.0.1
(tests/beam/webhdfs_stub.py: the REST protocol Beam's `hdfs://` file
system speaks, over a temporary folder).

`--hdfs_host/--hdfs_port/--hdfs_user` are pipeline options; Beam's
`FileSystems` sees them only once given, and the output directory is
prepared before any `Pipeline` exists (without the hand-over this failed
with "pipeline_options is not set"). With `--hdfs_full_urls`,
`hdfs://nn/corpus` is the folder `/corpus` of name node `nn`; without
it, Beam reads the same URL as the folder `/nn/corpus`.
"""

import json

import h5py
import pytest

from keras_elmo.cli.main import main
from keras_elmo.embedding.embedding_records import iter_records
from tests.beam.embed_checks import BATCH_ROUNDING
from tests.beam.embed_checks import relative_error
from tests.beam.webhdfs_stub import serve

pytest.importorskip("hdfs", reason="apache-beam[hadoop] (the test extra)")
pytestmark = pytest.mark.large

LINES = "the first line\n\nand a third one\n"


@pytest.fixture
def webhdfs(tmp_path):
    root = tmp_path / "hdfs"
    (root / "corpus").mkdir(parents=True)
    (root / "corpus" / "a.txt").write_text(LINES, encoding="utf-8")
    with serve(root) as port:
        yield root, port


def _options(port, full_urls):
    options = ["--hdfs_host=127.0.0.1", f"--hdfs_port={port}"]
    options += ["--hdfs_user=beam"]
    return options + (["--hdfs_full_urls"] if full_urls else [])


def test_hdfs_input_and_output_get_past_options_and_output_preparation(
    webhdfs, reference_weights, tmp_path
):
    root, port = webhdfs
    options, weights = reference_weights("tiny")
    model = ["--options", options, "--weights", weights, "--top"]
    argv = ["embed", "hdfs://nn/corpus/*.txt", "hdfs://nn/vectors"] + model
    argv += ["--runner", "FnApiRunner", "--direct_num_workers=1"]
    argv += _options(port, full_urls=True)
    assert main(argv) == 0
    manifest = json.loads((root / "vectors" / "manifest.json").read_text())
    assert manifest["counts"]["lines"] == 3
    assert manifest["counts"]["blank_lines"] == 1
    # Exactly the lines and vectors of the in-process command.
    local = tmp_path / "a.txt"
    local.write_text(LINES, encoding="utf-8")
    expected = tmp_path / "local.hdf5"
    assert main(["embed", str(local), str(expected)] + model) == 0
    records = list(iter_records(str(root / "vectors")))
    assert sorted(r["line"] for r in records) == [0, 1, 2]
    with h5py.File(expected, "r") as reference:
        for record in records:
            want = reference[str(record["line"])][()]
            assert record["vectors"].shape == want.shape
            assert relative_error(record["vectors"], want) <= BATCH_ROUNDING
    # The output check runs on HDFS too: a rerun is refused, then --force.
    assert main(argv) != 0
    assert main(argv + ["--force"]) == 0
    assert not (root / "nn").exists()


def test_without_full_urls_the_host_part_is_a_folder(
    webhdfs, reference_weights
):
    root, port = webhdfs
    (root / "nn").mkdir()
    (root / "corpus").rename(root / "nn" / "corpus")
    options, weights = reference_weights("tiny")
    argv = ["embed", "hdfs://nn/corpus/*.txt", "hdfs://nn/vectors"]
    argv += ["--options", options, "--weights", weights, "--top"]
    argv += ["--runner", "FnApiRunner", "--direct_num_workers=1"]
    argv += _options(port, full_urls=False)
    assert main(argv) == 0
    assert (root / "nn" / "vectors" / "manifest.json").exists()
