"""`WriteEmbeddings`: embedded sentences -> TFRecord shards + manifest.

Shards: a record goes to shard `crc32(file, line) % num_shards`; after a
GroupByKey, one DoFn call writes a whole shard to a temporary file and
renames it to `embeddings-IIIII-of-NNNNN.tfrecord`, so a retried call
rewrites the whole shard, never half of it, and two attempts at one
shard leave one complete file. With `num_shards=0` the count comes from
the encoded size (`SHARD_BYTES` per shard).

Faults: every step is a plain Beam transform, so a failed bundle is
retried by the runner and its partial output discarded. The manifest is
written last, from combined counts (exactly once, unlike metrics), and
only after checking that the shards hold exactly one record per embedded
line and (from `embed_corpus`) that every line read was embedded: a
record lost anywhere on the way fails the pipeline instead of leaving a
silently short output.
"""

import json
import math
import uuid
import zlib

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.tfrecordio import _TFRecordUtil

from keras_elmo.export.embed_lines import is_utf8
from keras_elmo.export.embedding_records import COUNTS
from keras_elmo.export.embedding_records import FORMAT
from keras_elmo.export.embedding_records import MANIFEST
from keras_elmo.export.embedding_records import SHARD_PREFIX
from keras_elmo.export.embedding_records import SHARD_SUFFIX
from keras_elmo.export.embedding_records import encode_record

SHARD_BYTES = 128 << 20  # encoded bytes per shard when num_shards=0
MAX_AUTO_SHARDS = 10_000


def _counts(record, max_tokens):
    _, sentence, tokens, _ = record
    n = len(tokens)
    kept = n if max_tokens is None else min(n, max_tokens)
    return (1, n, kept, int(n == 0), int(not is_utf8(sentence)), int(kept < n))


def _sum_counts(rows):
    totals = [0] * len(COUNTS)
    for row in rows:
        totals = [a + b for a, b in zip(totals, row)]
    return tuple(totals)


def shard_path(output_dir, index, num_shards):
    """`OUTPUT/embeddings-IIIII-of-NNNNN.tfrecord`."""
    name = f"{SHARD_PREFIX}-{index:05d}-of-{num_shards:05d}{SHARD_SUFFIX}"
    return FileSystems.join(output_dir, name)


def write_record(f, data):
    """One TFRecord frame (length, masked CRC-32C of the length, data,
    masked CRC-32C of the data): the framing of Beam's own
    `WriteToTFRecord`, which this helper of `apache_beam.io.tfrecordio`
    writes."""
    _TFRecordUtil.write_record(f, data)


def _write_then_rename(final, tmp, write):
    """Calls `write(f)` on a new file `tmp`, then renames it to `final`
    (a reader never sees a partial `final`); `tmp` is deleted if that
    fails. Returns what `write` returned."""
    try:
        with FileSystems.create(tmp) as f:
            result = write(f)
        FileSystems.rename([tmp], [final])
    except BaseException:
        _delete_quietly(tmp)
        raise
    return result


def _delete_quietly(path):
    try:
        FileSystems.delete([path])
    except Exception:  # noqa: BLE001 - best effort; the error is raised
        pass


def _tmp_name(final):
    """A temporary name beside `final`, unique to this attempt."""
    return f"{final}.tmp-{uuid.uuid4().hex}"


def auto_num_shards(total_bytes):
    """Shards for `total_bytes` of encoded records: one per `SHARD_BYTES`
    (at least 1, at most `MAX_AUTO_SHARDS`)."""
    return min(MAX_AUTO_SHARDS, max(1, math.ceil(total_bytes / SHARD_BYTES)))


def _shard_key(record, num_shards):
    (path, line), data = record
    key = f"{path}\0{line}".encode("utf-8", "surrogateescape")
    return zlib.crc32(key) % num_shards, data


class _WriteShard(beam.DoFn):
    """`(index, records)` -> the whole shard file, then `(name, count)`."""

    def __init__(self, output_dir):
        self.output_dir = output_dir

    def process(self, group, num_shards):
        index, records = group
        final = shard_path(self.output_dir, index, num_shards)

        def write(f):
            count = 0
            for data in records:
                write_record(f, data)
                count += 1
            return count

        count = _write_then_rename(final, _tmp_name(final), write)
        yield FileSystems.split(final)[1], count


def check_shard_counts(counts, written, num_shards, lines_read=None):
    """Raises RuntimeError unless the shards written hold one record per
    embedded line (`counts[0]`), no shard index is out of range and, when
    `lines_read` is given, every line read was embedded."""
    names = [name for name, _ in written]
    if len(set(names)) != len(names):
        raise RuntimeError(f"A shard was reported twice: {sorted(names)}")
    if lines_read is not None and lines_read != counts[0]:
        raise RuntimeError(
            f"{lines_read} lines were read but {counts[0]} were embedded; "
            "the output is incomplete and no manifest was written."
        )
    in_shards = sum(count for _, count in written)
    if in_shards != counts[0] or len(written) > num_shards:
        raise RuntimeError(
            f"The shards hold {in_shards} records in {len(written)} files, "
            f"but {counts[0]} lines were embedded into {num_shards} shards; "
            "the output is incomplete and no manifest was written."
        )


class _WriteManifest(beam.DoFn):
    def __init__(self, output_dir, header):
        self.output_dir = output_dir
        self.header = header

    def process(self, _, counts, files, written, num_shards, lines_read):
        check_shard_counts(counts, written, num_shards, lines_read)
        present = {name for name, _ in written}
        paths = [
            shard_path(self.output_dir, i, num_shards)
            for i in range(num_shards)
        ]
        names = [FileSystems.split(path)[1] for path in paths]
        for path, name in zip(paths, names):
            if name not in present:  # a shard no record hashed to
                _write_then_rename(path, _tmp_name(path), lambda f: None)
        leftovers = FileSystems.join(
            self.output_dir, SHARD_PREFIX + "-*" + SHARD_SUFFIX + ".tmp-*"
        )
        for result in FileSystems.match([leftovers]):
            for metadata in result.metadata_list:  # of failed attempts
                _delete_quietly(metadata.path)
        manifest = dict(self.header)
        manifest["counts"] = dict(zip(COUNTS, counts))
        manifest["counts"]["shards"] = num_shards
        manifest["files"] = dict(sorted(files.items()))
        manifest["shards"] = names
        data = json.dumps(manifest, indent=2, sort_keys=True).encode()
        final = FileSystems.join(self.output_dir, MANIFEST)
        _write_then_rename(final, final + ".tmp", lambda f: f.write(data))
        yield final


class WriteEmbeddings(beam.PTransform):
    """`(key, sentence, tokens, vectors)` -> shards, then the manifest.

    Args:
        output_dir: str. The output directory (any Beam file system).
        header: dict. Manifest entries (options, model); `format`,
            `counts`, `files` and `shards` are added.
        dtype: str. `"float32"` or `"float16"`.
        num_shards: int. Shards to write; 0 chooses one per `SHARD_BYTES`
            of encoded records.
        lines_read: optional PCollection holding one int, the lines read
            upstream; the manifest is then written only if every one of
            them reached the shards.
    """

    def __init__(
        self,
        output_dir,
        header,
        dtype="float32",
        num_shards=0,
        lines_read=None,
    ):
        super().__init__()
        self.lines_read = lines_read
        self.output_dir = output_dir
        self.header = dict(header, format=FORMAT, dtype=dtype)
        self.dtype = dtype
        self.num_shards = num_shards

    def expand(self, records):
        dtype = self.dtype
        pipeline = records.pipeline
        encoded = records | "Encode" >> beam.Map(
            lambda r: (
                r[0],
                encode_record(r[0][0], r[0][1], r[1], r[2], r[3], dtype),
            )
        )
        if self.num_shards:
            num_shards = pipeline | "NumShards" >> beam.Create(
                [self.num_shards]
            )
        else:
            num_shards = (
                encoded
                | "Bytes" >> beam.Map(lambda r: len(r[1]))
                | "TotalBytes" >> beam.CombineGlobally(sum)
                | "NumShards" >> beam.Map(auto_num_shards)
            )
        num_shards = beam.pvalue.AsSingleton(num_shards)
        written = (
            encoded
            | "ShardKey" >> beam.Map(_shard_key, num_shards)
            | "GroupShards" >> beam.GroupByKey()
            | "Shards" >> beam.ParDo(_WriteShard(self.output_dir), num_shards)
        )
        max_tokens = self.header.get("max_tokens")
        counts = (
            records
            | "Count" >> beam.Map(_counts, max_tokens)
            | "Sum" >> beam.CombineGlobally(_sum_counts)
        )
        files = (
            records
            | "File" >> beam.Map(lambda r: (r[0][0], 1))
            | "Lines" >> beam.CombinePerKey(sum)
        )
        lines_read = self.lines_read
        if lines_read is None:
            lines_read = pipeline | "NotCounted" >> beam.Create([None])
        return (
            pipeline
            | "Once" >> beam.Create([None])
            | "Manifest"
            >> beam.ParDo(
                _WriteManifest(self.output_dir, self.header),
                beam.pvalue.AsSingleton(counts),
                beam.pvalue.AsDict(files),
                beam.pvalue.AsList(written),
                num_shards,
                beam.pvalue.AsSingleton(lines_read),
            )
        )
