"""`WriteEmbeddings`: embedded sentences -> TFRecord shards + manifest.

Shards: Beam's own `WriteToTFRecord` writes
`OUTPUT/embeddings-SSSSS-of-NNNNN.tfrecord` (`num_shards` of them, or as
many as the runner's bundles with `num_shards=0`). Its file-based sink
writes each bundle into a temporary file under
`OUTPUT/beam-temp-embeddings-*` and, once every bundle is done, renames
the files of the successful attempts only: a retried bundle leaves no
half or doubled shard, and the temporary folder is removed.

The manifest is written last, from combined counts (exactly once, unlike
metrics), and only after checking, from the shards as written (listed
from the file system once the sink has finalized, their TFRecord frames
counted back in parallel), that they hold exactly one record per
embedded line, that (from `embed_corpus`) every line read was embedded,
and that every worker loaded the same model: a record lost anywhere on
the way fails the pipeline instead of leaving a silently short output.
It records what produced the output as `run`
(`keras_elmo.integrations.beam.run_manifest`: the model, each input file's size,
mtime and sha256, the settings, the package version).
"""

import json
import struct

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.tfrecordio import WriteToTFRecord

from keras_elmo.embedding.batching import is_utf8
from keras_elmo.embedding.embedding_records import COUNTS
from keras_elmo.embedding.embedding_records import FORMAT
from keras_elmo.embedding.embedding_records import MANIFEST
from keras_elmo.embedding.embedding_records import SHARD_PREFIX
from keras_elmo.embedding.embedding_records import SHARD_SUFFIX
from keras_elmo.embedding.embedding_records import encode_record
from keras_elmo.integrations.beam.run_manifest import completed_record

SHARD_TEMPLATE = "-SSSSS-of-NNNNN"
FRAME_HEADER = 12  # uint64 length + masked CRC-32C of the length
FRAME_FOOTER = 4  # masked CRC-32C of the data
MODEL_FACTS = ("num_layers", "dim", "max_tokens", "model", "model_identity")


def _counts(record):
    """`COUNTS` of one record; the embedded tokens are the vectors'."""
    _, sentence, tokens, vectors, _ = record
    n = len(tokens)
    kept = int(vectors.shape[-2]) if n else 0
    return (1, n, kept, int(n == 0), int(not is_utf8(sentence)), int(kept < n))


def _sum_counts(rows):
    totals = [0] * len(COUNTS)
    for row in rows:
        totals = [a + b for a, b in zip(totals, row)]
    return tuple(totals)


def count_frames(path):
    """TFRecord records in the file at `path` (any Beam file system),
    from their frame headers: the data is skipped, not read.

    Raises:
        RuntimeError: the file ends inside a frame (it is truncated).
    """
    (match,) = FileSystems.match([path])
    size = match.metadata_list[0].size_in_bytes
    count, position = 0, 0
    with FileSystems.open(
        path,
        mime_type="application/octet-stream",
        compression_type=CompressionTypes.UNCOMPRESSED,
    ) as f:
        while position < size:
            f.seek(position)
            header = f.read(FRAME_HEADER)
            if len(header) < FRAME_HEADER:
                raise RuntimeError(f"Shard {path!r} ends inside a record.")
            (length,) = struct.unpack("<Q", header[:8])
            position += FRAME_HEADER + length + FRAME_FOOTER
            count += 1
    if position != size:
        raise RuntimeError(f"Shard {path!r} ends inside a record.")
    return count


def _count_shard(path):
    return FileSystems.split(path)[1], count_frames(path)


def list_shards(_, prefix, finalized):
    """Paths of the shards under `prefix`, listed from the file system.

    `finalized` (Beam's `WriteToTFRecord` output, as a side input) is only
    a barrier: it is ready once the sink's finalize step has renamed every
    shard. Its contents are not used: the sink emits them at the maximum
    timestamp, past the end of the global window, so a step that reads
    them can see its side input "complete" before they arrive (it did, on
    Beam 2.77's BundleBasedDirectRunner). The shards' own names are the
    truth, and `check_shard_counts` checks they make up one set.
    """
    del finalized
    pattern = f"{prefix}-*-of-*{SHARD_SUFFIX}"
    (match,) = FileSystems.match([pattern])
    return sorted(m.path for m in match.metadata_list)


def check_shard_counts(counts, written, lines_read=None):
    """Raises RuntimeError unless the shards written hold one record per
    embedded line (`counts[0]`), their names say one shard count that
    they all make up, and, when `lines_read` is given, every line read
    was embedded.

    Args:
        counts: tuple of the `COUNTS` totals.
        written: list of `(shard name, records in it)`.
        lines_read: int or None.
    """
    names = sorted(name for name, _ in written)
    if len(set(names)) != len(names):
        raise RuntimeError(f"A shard was reported twice: {names}")
    if lines_read is not None and lines_read != counts[0]:
        raise RuntimeError(
            f"{lines_read} lines were read but {counts[0]} were embedded; "
            "the output is incomplete and no manifest was written."
        )
    totals = {name.rsplit("-of-", 1)[-1] for name in names}
    in_shards = sum(count for _, count in written)
    expected = [f"{len(names):05d}{SHARD_SUFFIX}"] if names else []
    if in_shards != counts[0] or sorted(totals) != expected:
        raise RuntimeError(
            f"The shards hold {in_shards} records in {len(names)} files "
            f"({names[:3]}...), but {counts[0]} lines were embedded; the "
            "output is incomplete and no manifest was written."
        )


def check_one_model(model_ids):
    """The manifest entries of the one model every worker loaded (JSON
    `model_id`s of `keras_elmo.integrations.beam.model_handler.model_facts`);
    none for an empty input.

    Raises:
        RuntimeError: workers loaded different models.
    """
    distinct = sorted(set(model_ids))
    if len(distinct) > 1:
        raise RuntimeError(
            f"The workers loaded {len(distinct)} different models (their "
            f"descriptions: {distinct}); no manifest was written."
        )
    if not distinct:
        return dict.fromkeys(MODEL_FACTS)
    return json.loads(distinct[0])


def write_atomically(path, data):
    """Writes `data` to `path` through a temporary file beside it, renamed
    when complete (on any Beam file system)."""
    tmp = path + ".tmp"
    try:
        with FileSystems.create(tmp) as f:
            f.write(data)
        FileSystems.rename([tmp], [path])
    except BaseException:
        try:
            FileSystems.delete([tmp])
        except Exception:  # noqa: BLE001 - the first error is raised
            pass
        raise


class _WriteManifest(beam.DoFn):
    def __init__(self, output_dir, header):
        self.output_dir = output_dir
        self.header = header

    def process(
        self, _, counts, files, written, lines_read, model_ids, input_files
    ):
        check_shard_counts(counts, written, lines_read)
        manifest = dict(self.header)
        manifest.update(check_one_model(model_ids))
        manifest["run"] = completed_record(
            self.header, manifest["model_identity"], input_files
        )
        manifest["counts"] = dict(zip(COUNTS, counts))
        manifest["counts"]["shards"] = len(written)
        manifest["files"] = dict(sorted(files.items()))
        manifest["shards"] = sorted(name for name, _ in written)
        data = json.dumps(manifest, indent=2, sort_keys=True).encode()
        final = FileSystems.join(self.output_dir, MANIFEST)
        write_atomically(final, data)
        yield final


def _encode(record, dtype):
    (path, line), sentence, tokens, vectors, _ = record
    return encode_record(path, line, sentence, tokens, vectors, dtype)


class WriteEmbeddings(beam.PTransform):
    """`(key, sentence, tokens, vectors, model_id)` -> shards, manifest.

    Args:
        output_dir: str. The output directory (any Beam file system).
        header: dict. Manifest entries (input, options); `format`,
            `dtype`, the model's facts, `counts`, `files` and `shards` are
            added.
        dtype: str. `"float32"` or `"float16"`.
        num_shards: int. Shards to write; 0 lets the runner choose (one
            per bundle that writes).
        lines_read: optional PCollection holding one int, the lines read
            upstream; the manifest is then written only if every one of
            them reached the shards.
        input_files: optional PCollection of `(path, identity)`, the
            input files read (`ReadSentences.input_files`), recorded in
            the manifest's `run`.
    """

    def __init__(
        self,
        output_dir,
        header,
        dtype="float32",
        num_shards=0,
        lines_read=None,
        input_files=None,
    ):
        super().__init__()
        self.lines_read = lines_read
        self.input_files = input_files
        self.output_dir = output_dir
        self.header = dict(header, format=FORMAT, dtype=dtype)
        self.dtype = dtype
        self.num_shards = num_shards

    def expand(self, records):
        pipeline = records.pipeline
        prefix = FileSystems.join(self.output_dir, SHARD_PREFIX)
        finalized = (
            records
            | "Encode" >> beam.Map(_encode, self.dtype)
            | "Shards"
            >> WriteToTFRecord(
                prefix,
                file_name_suffix=SHARD_SUFFIX,
                num_shards=self.num_shards,
                shard_name_template=SHARD_TEMPLATE,
            )
        )
        written = (
            pipeline
            | "AfterFinalize" >> beam.Create([None])
            | "ListShards"
            >> beam.FlatMap(list_shards, prefix, beam.pvalue.AsList(finalized))
            | "Spread" >> beam.Reshuffle()
            | "CountBack" >> beam.Map(_count_shard)
        )
        counts = (
            records
            | "Count" >> beam.Map(_counts)
            | "Sum" >> beam.CombineGlobally(_sum_counts)
        )
        files = (
            records
            | "File" >> beam.Map(lambda r: (r[0][0], 1))
            | "Lines" >> beam.CombinePerKey(sum)
        )
        models = (
            records
            | "ModelId" >> beam.Map(lambda r: r[4])
            | "Models" >> beam.Distinct()
        )
        lines_read = self.lines_read
        if lines_read is None:
            lines_read = pipeline | "NotCounted" >> beam.Create([None])
        input_files = self.input_files
        if input_files is None:
            input_files = pipeline | "NoInputFiles" >> beam.Create([])
        return (
            pipeline
            | "Once" >> beam.Create([None])
            | "Manifest"
            >> beam.ParDo(
                _WriteManifest(self.output_dir, self.header),
                beam.pvalue.AsSingleton(counts),
                beam.pvalue.AsDict(files),
                beam.pvalue.AsList(written),
                beam.pvalue.AsSingleton(lines_read),
                beam.pvalue.AsList(models),
                beam.pvalue.AsDict(input_files),
            )
        )
