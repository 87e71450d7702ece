"""One model load per worker process, none on the launching machine: the
launcher only describes the model arguments, and the manifest's model
facts come from what the workers loaded.

A counting loader (a module-level function, which Beam ships by
reference) appends `pid thread` to a log file per load, then loads the
tiny test model as `keras-elmo embed` does.
"""

import os
import threading

import pytest

from keras_elmo.embedding.embedding_records import read_manifest
from keras_elmo.embedding.model_spec import load_spec
from keras_elmo.integrations.beam import BiLMModelHandler
from keras_elmo.integrations.beam import prepare_output_dir
from keras_elmo.integrations.beam import run_embed_corpus
from keras_elmo.integrations.beam.model_handler import describe_spec
from tests.beam.corpus import write_corpus

pytestmark = pytest.mark.large

LOG = "KERAS_ELMO_TEST_LOAD_LOG"


def counting_loader(spec):
    with open(os.environ[LOG], "a") as f:
        f.write(f"{os.getpid()} {threading.get_ident()}\n")
    return load_spec(spec)


@pytest.mark.parametrize("mode", ["multi_threading", "multi_processing"])
def test_each_worker_process_loads_the_model_once(
    mode, reference_weights, tmp_path, monkeypatch
):
    options, weights = reference_weights("tiny")
    spec = {"options": options, "weights": weights}
    log = tmp_path / "loads.log"
    log.touch()
    monkeypatch.setenv(LOG, str(log))
    pattern, _, lines = write_corpus(str(tmp_path))
    output = str(tmp_path / "out")
    prepare_output_dir(output)
    header = describe_spec(spec)
    assert header == {"model_source": f"options={options}, weights={weights}"}
    handler = BiLMModelHandler(spec, batch_size=8, loader=counting_loader)
    assert log.read_text() == ""  # nothing loaded by building the pipeline
    args = ["--runner=FnApiRunner", "--direct_num_workers=2"]
    args += [f"--direct_running_mode={mode}"]
    run_embed_corpus(args, [pattern], output, handler, header)
    loads = [line.split() for line in log.read_text().splitlines()]
    pids = [pid for pid, _ in loads]
    assert len(set(pids)) == len(pids), loads  # once per process
    if mode == "multi_threading":
        assert len(loads) == 1, loads  # 2 threads, one shared model
    else:
        assert 1 <= len(loads) <= 2, loads
        assert str(os.getpid()) not in pids, loads  # not in the launcher
    manifest = read_manifest(output)
    assert manifest["counts"]["lines"] == sum(map(len, lines.values()))
    assert (manifest["num_layers"], manifest["dim"]) == (3, 32)
    assert manifest["max_tokens"] is None
    assert manifest["model_identity"]["kind"] == "bilm"
    assert manifest["model_source"] == header["model_source"]
