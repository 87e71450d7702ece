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

Shards and faults: `keras_elmo.beam.write_embeddings`.
"""

import bisect
import zlib

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import KeyedModelHandler
from apache_beam.ml.inference.base import RunInference

from keras_elmo.beam.local_runner import runner_for
from keras_elmo.beam.write_embeddings import WriteEmbeddings
from keras_elmo.export.embed_lines import decode_line
from keras_elmo.export.embed_lines import sentence_text
from keras_elmo.export.embed_lines import sentence_tokens
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
    sentences = pipeline | "Read" >> ReadSentences(patterns)
    lines_read = sentences | "LinesRead" >> beam.combiners.Count.Globally()
    records = (
        sentences
        | "Batch" >> BatchByLength(batch_size, batch_tokens, shards_per_bucket)
        | "Embed" >> EmbedBatches(model_handler)
    )
    return records | "Write" >> WriteEmbeddings(
        output_dir, header, model_handler.dtype, num_shards, lines_read
    )


def run_embed_corpus(
    pipeline_args, patterns, output_dir, model_handler, header, **kwargs
):
    """Runs `embed_corpus` in a pipeline made from command-line style
    options (`["--runner=FnApiRunner", ...]`); returns when it is done.

    Local runs with several workers (threads or processes) run on
    `SizeFlushedFnApiRunner` (`keras_elmo.beam.local_runner`: Beam's own
    `FnApiRunner` can drop elements there).
    """
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(list(pipeline_args))
    runner = runner_for(options)  # None: Beam picks from the options
    with beam.Pipeline(runner=runner, options=options) as pipeline:
        embed_corpus(
            pipeline, patterns, output_dir, model_handler, header, **kwargs
        )
