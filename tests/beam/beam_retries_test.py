"""`keras-elmo embed --runner` after injected failures: a retried bundle
(in a DoFn, in RunInference, inside Beam's own shard writer) gives
every line exactly once; a runner that does not retry fails loudly and
a forced rerun is exactly once.

Runners: the FnApiRunner (the DirectRunner's batch engine) with 2 worker
threads, and the BundleBasedDirectRunner, the local runner that retries a
failed bundle (the FnApiRunner fails the pipeline instead). Neither needs
the network (the DirectRunner would first try to download Prism).
"""

import os
import zlib

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from keras_elmo.cli.main import main
from keras_elmo.integrations.beam import BiLMModelHandler
from keras_elmo.integrations.beam import EmbedBatches
from keras_elmo.integrations.beam import ReadSentences
from keras_elmo.integrations.beam import WriteEmbeddings
from keras_elmo.integrations.beam.local_runner import runner_for
from keras_elmo.integrations.beam.model_handler import describe_spec
from tests.beam.embed_checks import TWO_WORKERS
from tests.beam.embed_checks import check_output
from tests.beam.embed_checks import corpus_size

pytestmark = pytest.mark.large


class FailOnceMidBundle(beam.DoFn):
    """Raises once per bundle, after the bundle's first `after` elements
    went downstream; a marker file per bundle remembers the failure, so
    the runner's retry of the same bundle passes."""

    def __init__(self, marker_dir, after=3):
        self.marker_dir = marker_dir
        self.after = after

    def start_bundle(self):
        self.count = 0

    def process(self, record):
        self.count += 1
        if self.count == self.after + 1:
            name = "dofn-%s-%d" % (
                zlib.crc32(record[0][0].encode()),
                record[0][1],
            )
            marker = os.path.join(self.marker_dir, name)
            if not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError(f"injected failure at {record[0]}")
        yield record


class FailingHandler(BiLMModelHandler):
    """A worker dying in RunInference: the first `failures` batches of
    several sentences fail once each (a marker file per batch), after the
    bundle's earlier batches went downstream. At most `failures` attempts
    of one bundle fail, fewer than the runner's 4."""

    def __init__(self, spec, marker_dir, failures=2, **kwargs):
        super().__init__(spec, **kwargs)
        self.marker_dir = marker_dir
        self.failures = failures

    def run_inference(self, batch, model, inference_args=None):
        (sentence, tokens) = batch[0]
        name = "model-%d" % zlib.crc32(sentence + b"\0".join(tokens))
        marker = os.path.join(self.marker_dir, name)
        done = [n for n in os.listdir(self.marker_dir) if n[:6] == "model-"]
        if len(batch) > 1 and len(done) < self.failures:
            if not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError("injected inference failure")
        return super().run_inference(batch, model, inference_args)


def test_retried_bundles_give_every_line_exactly_once(corpus, tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    output = str(tmp_path / "out")
    os.makedirs(output)
    header = describe_spec(corpus["spec"])
    handler = FailingHandler(
        corpus["spec"],
        str(markers),
        layers="average",
        dtype="float16",
        batch_size=8,
        batch_tokens=400,
    )
    options = PipelineOptions(["--runner=BundleBasedDirectRunner"])
    with beam.Pipeline(options=options) as p:
        _ = (
            p
            | ReadSentences([corpus["pattern"]])
            | EmbedBatches(handler)
            | beam.ParDo(FailOnceMidBundle(str(markers)))
            | WriteEmbeddings(output, dict(header, layers="average"), "float16")
        )
    names = os.listdir(markers)
    assert any(n.startswith("dofn-") for n in names), names  # failures ran
    assert any(n.startswith("model-") for n in names), names
    check_output(corpus, output, mode="average")


def test_two_workers_fail_loudly_then_a_forced_rerun_is_exactly_once(
    corpus, tmp_path
):
    """The 2-worker FnApiRunner does not retry a failed bundle (Beam's
    BundleBasedDirectRunner does, with one worker: the test above): an
    injected failure fails the run, leaving no manifest, and the command's
    rerun with --force then gives every line exactly once."""
    markers = tmp_path / "markers"
    markers.mkdir()
    output = str(tmp_path / "out")
    os.makedirs(output)
    header = describe_spec(corpus["spec"])
    handler = FailingHandler(
        corpus["spec"], str(markers), failures=1, batch_size=8
    )
    options = PipelineOptions(["--runner=FnApiRunner"] + TWO_WORKERS[2:])
    with pytest.raises(Exception, match="injected inference failure"):
        with beam.Pipeline(runner=runner_for(options), options=options) as p:
            _ = (
                p
                | ReadSentences([corpus["pattern"]])
                | EmbedBatches(handler)
                | WriteEmbeddings(output, header)
            )
    assert os.listdir(markers), "the failure did not run"
    assert "manifest.json" not in os.listdir(output)
    argv = ["embed", corpus["pattern"], output] + corpus["model"]
    assert main(argv + TWO_WORKERS + ["--force"]) == 0
    check_output(corpus, output)


def test_a_shard_write_failing_midway_is_rewritten_whole(
    corpus, tmp_path, monkeypatch
):
    """A worker dying after writing part of a shard inside Beam's own
    `WriteToTFRecord`: the retry writes the bundle again, the failed
    attempt's temporary file is dropped, every line is there once."""
    from apache_beam.io import tfrecordio

    markers = tmp_path / "markers"
    markers.mkdir()
    write = tfrecordio._TFRecordSink.write_encoded_record
    written = []

    def failing(self, file_handle, value):
        write(self, file_handle, value)
        written.append(value)
        failures = len(os.listdir(markers))
        if len(written) % 40 == 5 and failures < 2:  # < the 4 attempts
            (markers / f"shard-{len(written)}").touch()
            raise OSError("injected failure while writing a shard")

    monkeypatch.setattr(
        tfrecordio._TFRecordSink, "write_encoded_record", failing
    )
    output = str(tmp_path / "out")
    os.makedirs(output)
    header = describe_spec(corpus["spec"])
    handler = BiLMModelHandler(corpus["spec"], batch_size=8)
    options = PipelineOptions(["--runner=BundleBasedDirectRunner"])
    with beam.Pipeline(options=options) as p:
        _ = (
            p
            | ReadSentences([corpus["pattern"]])
            | EmbedBatches(handler)
            | WriteEmbeddings(output, header, num_shards=4)
        )
    assert len(os.listdir(markers)) == 2, "the failures did not run"
    assert len(written) > corpus_size(corpus)  # the failed attempts wrote
    manifest = check_output(corpus, output)
    assert manifest["counts"]["shards"] == 4
