"""The Beam pipeline of `keras-elmo embed --runner`: files -> TFRecord shards.

    lines  --ReadSentences-->  ((file, line), (sentence, tokens))
           --BatchByLength-->  lists of those, one length bucket each,
                               at most `batch_tokens` padded tokens
           --EmbedBatches--->  (key, sentence, tokens, vectors)
                               (RunInference + `BiLMModelHandler`)
           --WriteEmbeddings-> embeddings-*.tfrecord + manifest.json

Batching: a sentence of `n` tokens goes to the length bucket whose upper
bound `b` is the first of `BUCKET_BOUNDS` >= n, and to one of
`shards_per_bucket` sub-keys (a hash of its key) so that a bucket spreads
over workers; after the GroupByKey, each group is cut into batches of at
most `batch_size` sentences and `batch_tokens` padded positions
(`len(batch) * max(n)`; a longer sentence is a batch of its own). A
bucket's lengths differ by at most 25% above 16 tokens, so padding stays
small, as with `keras-elmo embed`'s sort by length. The biLM is stateless:
a sentence's vectors do not depend on the rest of its batch, so any
batching gives the in-process command's vectors.

Faults: every step is a plain Beam transform, so a failed bundle is
retried by the runner and its partial output discarded; the shards are
written by Beam's file sink (temporary files renamed once the write is
final) and the manifest after them, from combined counts (exactly once,
unlike metrics).
"""

import bisect
import json
import zlib

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.tfrecordio import WriteToTFRecord
from apache_beam.ml.inference.base import KeyedModelHandler
from apache_beam.ml.inference.base import RunInference

from keras_elmo.export.embed_lines import decode_line
from keras_elmo.export.embed_lines import is_utf8
from keras_elmo.export.embed_lines import sentence_text
from keras_elmo.export.embed_lines import sentence_tokens
from keras_elmo.export.embedding_records import COUNTS
from keras_elmo.export.embedding_records import FORMAT
from keras_elmo.export.embedding_records import MANIFEST
from keras_elmo.export.embedding_records import SHARD_PREFIX
from keras_elmo.export.embedding_records import SHARD_SUFFIX
from keras_elmo.export.embedding_records import encode_record
from keras_elmo.utils.validation import check_positive_int


def _bucket_bounds():
    bounds = list(range(0, 17))
    while bounds[-1] < 1 << 20:
        bounds.append(bounds[-1] + max(1, bounds[-1] // 4))
    return tuple(bounds)


BUCKET_BOUNDS = _bucket_bounds()  # 0..16, then +25% steps


def length_bucket(num_tokens):
    """Index of the first bound >= `num_tokens` (longer: the last)."""
    return min(
        bisect.bisect_left(BUCKET_BOUNDS, num_tokens), len(BUCKET_BOUNDS)
    )


class _ReadLines(beam.DoFn):
    """A matched file -> `((path, line), (sentence, tokens))` per line."""

    def process(self, readable_file):
        path = readable_file.metadata.path
        with FileSystems.open(
            path,
            mime_type="application/octet-stream",
            compression_type=CompressionTypes.AUTO,
        ) as f:
            number = 0
            while True:
                raw = f.readline()
                if not raw:
                    break
                line = decode_line(raw)
                sentence = sentence_text(line).encode(
                    "utf-8", "surrogateescape"
                )
                yield (path, number), (sentence, tuple(sentence_tokens(line)))
                number += 1


class ReadSentences(beam.PTransform):
    """Sentence-per-line files (globs, `.gz` by name) -> keyed sentences.

    Each line (ending at `\\n`) gives `((path, line_number), (sentence,
    tokens))` exactly as `keras-elmo embed` reads it
    (`keras_elmo.export.embed_lines`); blank and non-UTF-8 lines are kept.
    A pattern that matches no file fails the pipeline.
    """

    def __init__(self, patterns):
        super().__init__()
        self.patterns = list(patterns)

    def expand(self, pbegin):
        return (
            pbegin
            | "Patterns" >> beam.Create(self.patterns)
            | "Match"
            >> fileio.MatchAll(
                empty_match_treatment=fileio.EmptyMatchTreatment.DISALLOW
            )
            | "Open" >> fileio.ReadMatches()
            | "Lines" >> beam.ParDo(_ReadLines())
        )


class _SplitIntoBatches(beam.DoFn):
    def __init__(self, batch_size, batch_tokens):
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens

    def process(self, group):
        batch, longest = [], 0
        for item in group[1]:
            n = len(item[1][1])
            cost = (len(batch) + 1) * max(longest, n)
            if batch and (
                len(batch) == self.batch_size or cost > self.batch_tokens
            ):
                yield batch
                batch, longest = [], 0
            batch.append(item)
            longest = max(longest, n)
        if batch:
            yield batch


def _bucket_key(shards):
    def key(item):
        (path, line), (_, tokens) = item
        data = f"{path}\0{line}".encode("utf-8", "surrogateescape")
        return (length_bucket(len(tokens)), zlib.crc32(data) % shards), item

    return key


class BatchByLength(beam.PTransform):
    """Keyed sentences -> lists of them, by length bucket and token budget.

    Args:
        batch_size: int. At most this many sentences per batch.
        batch_tokens: int. At most this many padded positions per batch
            (`len(batch) * longest`), unless one sentence alone is longer.
        shards_per_bucket: int. Sub-keys per length bucket (parallelism of
            a bucket after the GroupByKey).
    """

    def __init__(self, batch_size=64, batch_tokens=4096, shards_per_bucket=16):
        super().__init__()
        check_positive_int("batch_size", batch_size)
        check_positive_int("batch_tokens", batch_tokens)
        check_positive_int("shards_per_bucket", shards_per_bucket)
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.shards_per_bucket = shards_per_bucket

    def expand(self, sentences):
        return (
            sentences
            | "Bucket" >> beam.Map(_bucket_key(self.shards_per_bucket))
            | "Group" >> beam.GroupByKey()
            | "Split"
            >> beam.ParDo(_SplitIntoBatches(self.batch_size, self.batch_tokens))
        )


def _flatten(keyed_result):
    key, result = keyed_result
    sentence, tokens = result.example
    return key, sentence, tokens, result.inference


class EmbedBatches(beam.PTransform):
    """Batches -> `(key, sentence, tokens, vectors)` via RunInference.

    The batches are formed by `BatchByLength`, so RunInference's own
    batching is switched off (`with_no_batching`).
    """

    def __init__(self, model_handler):
        super().__init__()
        self.model_handler = model_handler

    def expand(self, batches):
        handler = KeyedModelHandler(self.model_handler).with_no_batching()
        return (
            batches
            | "RunInference" >> RunInference(handler)
            | "Flatten" >> beam.Map(_flatten)
        )


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


class _WriteManifest(beam.DoFn):
    def __init__(self, output_dir, header):
        self.output_dir = output_dir
        self.header = header

    def process(self, _, counts, files, shards):
        manifest = dict(self.header)
        manifest["counts"] = dict(zip(COUNTS, counts))
        manifest["counts"]["shards"] = len(shards)
        manifest["files"] = dict(sorted(files.items()))
        manifest["shards"] = sorted(
            FileSystems.split(path)[1] for path in shards
        )
        data = json.dumps(manifest, indent=2, sort_keys=True).encode()
        final = FileSystems.join(self.output_dir, MANIFEST)
        tmp = final + ".tmp"
        with FileSystems.create(tmp) as f:
            f.write(data)
        FileSystems.rename([tmp], [final])
        yield final


class WriteEmbeddings(beam.PTransform):
    """`(key, sentence, tokens, vectors)` -> shards, then the manifest.

    Args:
        output_dir: str. The output directory (any Beam file system).
        header: dict. Manifest entries (options, model); `format`,
            `counts`, `files` and `shards` are added.
        dtype: str. `"float32"` or `"float16"`.
        num_shards: int. Shards to write; 0 lets the runner choose.
    """

    def __init__(self, output_dir, header, dtype="float32", num_shards=0):
        super().__init__()
        self.output_dir = output_dir
        self.header = dict(header, format=FORMAT, dtype=dtype)
        self.dtype = dtype
        self.num_shards = num_shards

    def expand(self, records):
        dtype = self.dtype
        shards = (
            records
            | "Encode"
            >> beam.Map(
                lambda r: encode_record(
                    r[0][0], r[0][1], r[1], r[2], r[3], dtype
                )
            )
            | "Shards"
            >> WriteToTFRecord(
                FileSystems.join(self.output_dir, SHARD_PREFIX),
                file_name_suffix=SHARD_SUFFIX,
                num_shards=self.num_shards,
            )
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
        pipeline = records.pipeline
        return (
            pipeline
            | "Once" >> beam.Create([None])
            | "Manifest"
            >> beam.ParDo(
                _WriteManifest(self.output_dir, self.header),
                beam.pvalue.AsSingleton(counts),
                beam.pvalue.AsDict(files),
                beam.pvalue.AsList(shards),
            )
        )


def embed_corpus(
    pipeline,
    patterns,
    output_dir,
    model_handler,
    header,
    batch_size=64,
    batch_tokens=4096,
    shards_per_bucket=16,
    num_shards=0,
):
    """Adds the whole embedding pipeline to `pipeline`; returns the
    PCollection holding the manifest's path once written."""
    records = (
        pipeline
        | "Read" >> ReadSentences(patterns)
        | "Batch" >> BatchByLength(batch_size, batch_tokens, shards_per_bucket)
        | "Embed" >> EmbedBatches(model_handler)
    )
    return records | "Write" >> WriteEmbeddings(
        output_dir, header, model_handler.dtype, num_shards
    )


def run_embed_corpus(
    pipeline_args, patterns, output_dir, model_handler, header, **kwargs
):
    """Runs `embed_corpus` in a pipeline made from command-line style
    options (`["--runner=FnApiRunner", ...]`); returns when it is done."""
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(list(pipeline_args))
    with beam.Pipeline(options=options) as pipeline:
        embed_corpus(
            pipeline, patterns, output_dir, model_handler, header, **kwargs
        )
