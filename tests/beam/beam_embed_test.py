"""`keras-elmo embed --runner`: the Beam pipeline gives `keras-elmo embed`'s
vectors for every line with the manifest's counts; reruns never mix
shards; HDF5 conversion; the command without Beam or without a runner.

Runner: the FnApiRunner (the DirectRunner's batch engine) with 2 worker
threads, and the BundleBasedDirectRunner's default sharding. Neither
needs the network (the DirectRunner would first try to download Prism).
"""

import os
import sys
import threading

import h5py
import numpy as np
import pytest

from keras_elmo.cli.main import main
from keras_elmo.embedding.embedding_records import records_to_hdf5
from keras_elmo.embedding.run_identity import hdf5_run_record
from keras_elmo.integrations.beam import BiLMModelHandler
from tests.beam.embed_checks import TWO_WORKERS
from tests.beam.embed_checks import check_output
from tests.beam.embed_checks import relative_error

pytestmark = pytest.mark.large


def test_two_workers_give_embed_vectors_for_every_line(
    corpus, tmp_path, monkeypatch
):
    threads_log = tmp_path / "threads.log"
    run_inference = BiLMModelHandler.run_inference

    def logged(self, batch, model, inference_args=None):
        with open(threads_log, "a") as f:
            f.write(f"{threading.get_ident()}\n")
        return run_inference(self, batch, model, inference_args)

    monkeypatch.setattr(BiLMModelHandler, "run_inference", logged)
    output = str(tmp_path / "out")
    argv = ["embed", corpus["pattern"], output] + corpus["model"]
    argv += ["--batch-tokens", "300", "--num-shards", "3"] + TWO_WORKERS
    assert main(argv) == 0
    batches = threads_log.read_text().split()
    assert len(set(batches)) == 2, batches  # both workers embedded batches
    manifest = check_output(corpus, output)
    assert manifest["counts"]["shards"] == 3
    assert manifest["layers"] == "all" and manifest["dtype"] == "float32"
    assert (manifest["num_layers"], manifest["dim"]) == (3, 32)
    from keras_elmo.embedding.embedder import BiLMEmbedder
    from keras_elmo.models.bilm import BiLM

    options, weights = corpus["spec"]["options"], corpus["spec"]["weights"]
    bilm = BiLM.from_allennlp(options, weights)
    assert manifest["model_identity"] == BiLMEmbedder(bilm).identity

    # The converter gives `keras-elmo embed`'s HDF5 file for the same lines.
    converted = str(tmp_path / "converted.hdf5")
    assert main(["embed-records", output, converted]) == 0
    with (
        h5py.File(converted, "r") as got,
        h5py.File(corpus["reference"], "r") as want,
    ):
        assert sorted(got) == sorted(want)
        assert got["sentence_to_index"][0] == want["sentence_to_index"][0]
        for key in want:
            if key != "sentence_to_index":
                assert got[key].dtype == np.float32
                assert relative_error(got[key][()], want[key][()]) <= 1e-6
        assert sorted(got.attrs) == ["keras_elmo_run"]  # and no dataset
    assert hdf5_run_record(converted) == manifest["run"]
    assert manifest["run"]["model"]["kind"] == "files"
    with pytest.raises(FileExistsError, match="`force=True`"):
        records_to_hdf5(output, converted)

    # A rerun over the same output refuses to mix old and new shards ...
    argv[argv.index("3")] = "2"
    assert main(argv) == 2
    assert len(os.listdir(output)) == 4  # untouched
    # ... and with --force replaces them (2 shards, the old 3 gone).
    (tmp_path / "out" / "notes.txt").write_text("kept")
    assert main(argv + ["--force", "--top"]) == 0
    os.remove(os.path.join(output, "notes.txt"))  # other files are kept
    manifest = check_output(corpus, output, mode="top")
    assert manifest["counts"]["shards"] == 2


def test_without_apache_beam_the_command_names_the_extra(
    corpus, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # import fails
    for name in [
        m for m in sys.modules if m.startswith("keras_elmo.integrations.beam")
    ]:
        monkeypatch.delitem(sys.modules, name)
    argv = ["embed", corpus["pattern"], str(tmp_path / "out")]
    assert main(argv + ["--runner", "DataflowRunner"]) == 2
    assert "pip install 'keras-elmo[beam]'" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out")


def test_pipeline_options_need_a_runner(corpus, tmp_path, capsys):
    argv = ["embed", corpus["pattern"], str(tmp_path / "out.hdf5")]
    assert main(argv + ["--project=p"]) == 2
    assert "need --runner" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["presets", "--project=p"])
    assert "unrecognized arguments: --project=p" in capsys.readouterr().err


def test_by_default_the_runner_chooses_the_shards(corpus, tmp_path):
    output = str(tmp_path / "out")
    argv = ["embed", corpus["pattern"], output] + corpus["model"]
    assert main(argv + ["--runner", "BundleBasedDirectRunner", "--top"]) == 0
    manifest = check_output(corpus, output, mode="top")
    count = manifest["counts"]["shards"]
    assert manifest["shards"] == [
        f"embeddings-{i:05d}-of-{count:05d}.tfrecord" for i in range(count)
    ]
