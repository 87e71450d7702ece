"""`keras-elmo embed --runner`: the Beam pipeline gives `keras-elmo embed`'s
vectors for every line, exactly once after injected failures, with the
manifest's counts; reruns never mix shards; HDF5 conversion.

Runners: the FnApiRunner (the DirectRunner's batch engine) with 2 worker
threads, and the BundleBasedDirectRunner, the local runner that retries a
failed bundle (the FnApiRunner fails the pipeline instead). Neither needs
the network (the DirectRunner would first try to download Prism).
"""

import os
import sys
import threading
import zlib

import apache_beam as beam
import h5py
import numpy as np
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from keras_elmo.beam import BiLMModelHandler
from keras_elmo.beam import EmbedBatches
from keras_elmo.beam import ReadSentences
from keras_elmo.beam import WriteEmbeddings
from keras_elmo.beam.local_runner import runner_for
from keras_elmo.beam.model_handler import describe_spec
from keras_elmo.cli.main import main
from keras_elmo.export.embedding_records import iter_records
from keras_elmo.export.embedding_records import read_manifest
from keras_elmo.export.embedding_records import records_to_hdf5
from tests.beam.corpus import write_corpus

pytestmark = pytest.mark.large

TWO_WORKERS = [
    "--runner",
    "FnApiRunner",
    "--direct_num_workers=2",
    "--direct_running_mode=multi_threading",
]


@pytest.fixture(scope="module")
def corpus(reference_weights, tmp_path_factory):
    """Input files, the tiny model and `keras-elmo embed`'s HDF5 output
    for their concatenation (the reference)."""
    options, weights = reference_weights("tiny")
    directory = tmp_path_factory.mktemp("corpus")
    pattern, both, lines = write_corpus(str(directory))
    reference = str(directory / "reference.hdf5")
    model = ["--options", options, "--weights", weights]
    assert main(["embed", both, reference, "--batch-size", "16"] + model) == 0
    offsets, total = {}, 0
    for path in sorted(lines):
        offsets[path] = total
        total += len(lines[path])
    return {
        "pattern": pattern,
        "lines": lines,
        "offsets": offsets,
        "reference": reference,
        "model": model,
        "spec": {"options": options, "weights": weights},
    }


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
                assert relative_error(got, want) <= 1e-6, key
    assert len(seen) == counts["lines"]
    return manifest


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
    from keras_elmo.export.embedding_runners import BiLMEmbedder
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


def test_without_apache_beam_the_command_names_the_extra(
    corpus, tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # import fails
    for name in [m for m in sys.modules if m.startswith("keras_elmo.beam")]:
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


def corpus_size(corpus):
    return sum(len(lines) for lines in corpus["lines"].values())


def test_by_default_the_runner_chooses_the_shards(corpus, tmp_path):
    output = str(tmp_path / "out")
    argv = ["embed", corpus["pattern"], output] + corpus["model"]
    assert main(argv + ["--runner", "BundleBasedDirectRunner", "--top"]) == 0
    manifest = check_output(corpus, output, mode="top")
    count = manifest["counts"]["shards"]
    assert manifest["shards"] == [
        f"embeddings-{i:05d}-of-{count:05d}.tfrecord" for i in range(count)
    ]


def test_a_record_missing_from_the_shards_fails_the_manifest():
    from keras_elmo.beam.write_embeddings import check_shard_counts

    counts = (306, 5000, 5000, 2, 1, 0)
    names = [f"embeddings-0000{i}-of-00002.tfrecord" for i in range(2)]
    check_shard_counts(counts, [(names[0], 100), (names[1], 206)])
    with pytest.raises(RuntimeError, match="305 records in 2 files"):
        check_shard_counts(counts, [(names[0], 100), (names[1], 205)])
    with pytest.raises(RuntimeError, match="reported twice"):
        check_shard_counts(counts, [(names[0], 100), (names[0], 206)])
    with pytest.raises(RuntimeError, match="306 records in 1 files"):
        check_shard_counts(counts, [(names[1], 306)])  # 1 of 2 shards
    check_shard_counts(counts, list(zip(names, (100, 206))), lines_read=306)
    with pytest.raises(RuntimeError, match="307 lines were read but 306"):
        check_shard_counts(counts, list(zip(names, (100, 206))), 307)


def test_shard_records_are_counted_from_their_frames(tmp_path):
    """`count_frames` reads the TFRecord framing `tf.io.TFRecordWriter`
    writes, and refuses a file cut inside a record."""
    import tensorflow as tf

    from keras_elmo.beam.write_embeddings import count_frames

    path = str(tmp_path / "shard.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for size in (0, 1, 300, 70_000):
            writer.write(b"x" * size)
    assert count_frames(path) == 4
    data = open(path, "rb").read()
    assert len(data) == 4 * 16 + 70_301
    open(path, "wb").write(data[:-1])
    with pytest.raises(RuntimeError, match="ends inside a record"):
        count_frames(path)
    open(path, "wb").write(b"")
    assert count_frames(path) == 0


def test_workers_with_different_models_fail_the_manifest():
    from keras_elmo.beam.write_embeddings import check_one_model

    one = '{"dim": 32, "model": "a"}'
    assert check_one_model([one, one]) == {"dim": 32, "model": "a"}
    with pytest.raises(RuntimeError, match="2 different models"):
        check_one_model([one, '{"dim": 32, "model": "b"}'])
    assert check_one_model([])["model_identity"] is None


def test_shards_are_listed_from_the_file_system_not_the_sinks_output(
    tmp_path,
):
    """The manifest's shard list comes from the finalized files (Beam's
    sink emits their names past the end of the global window, and the
    BundleBasedDirectRunner let a side input read them as empty): only
    `embeddings-*-of-*.tfrecord` directly under the output, sorted."""
    from keras_elmo.beam.write_embeddings import list_shards

    names = ["embeddings-00001-of-00002.tfrecord"]
    names.append("embeddings-00000-of-00002.tfrecord")
    for name in names + ["embeddings.manifest.json", "other.tfrecord"]:
        (tmp_path / name).write_bytes(b"")
    temp = tmp_path / "beam-temp-embeddings-1234"
    temp.mkdir()
    (temp / "embeddings-00002-of-00003.tfrecord").write_bytes(b"")
    prefix = str(tmp_path / "embeddings")
    assert list_shards(None, prefix, []) == [
        str(tmp_path / n) for n in sorted(names)
    ]
    assert list_shards(None, str(tmp_path / "none" / "embeddings"), []) == []
