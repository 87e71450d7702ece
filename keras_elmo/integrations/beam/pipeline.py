"""The Beam pipeline of `keras-elmo embed --runner`: files -> TFRecord shards.

    lines  --ReadSentences-->  ((file, line), (sentence, tokens)),
                               and (file, identity) once per file
           --Spread--------->  the same, redistributed (`beam.Reshuffle`)
           --EmbedBatches--->  (key, sentence, tokens, vectors, model_id)
                               (RunInference + `BiLMModelHandler`:
                               Beam's batches, sorted by length inside)
           --WriteEmbeddings-> embeddings-*.tfrecord + manifest.json

A file is read whole by one worker (line numbers need every line
before); `Spread` then hands its lines to any worker, so the embedding
(the cost) runs on all of them whatever the number of files: without
it a runner fuses reading and embedding, and one file is embedded by
one worker (measured on the local runner: docs/BEAM.md). Batching:
`keras_elmo.integrations.beam.model_handler`; shards, counts and faults:
`keras_elmo.integrations.beam.write_embeddings`.

What produced the output goes into its manifest as `run`
(`keras_elmo.integrations.beam.run_manifest`): each input file's identity is
taken by the worker that reads it, from the bytes it reads (no second read).
"""

import hashlib

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import KeyedModelHandler
from apache_beam.ml.inference.base import RunInference

from keras_elmo.embedding.batching import decode_line
from keras_elmo.embedding.batching import sentence_text
from keras_elmo.embedding.batching import sentence_tokens
from keras_elmo.integrations.beam.local_runner import runner_for
from keras_elmo.integrations.beam.write_embeddings import WriteEmbeddings

INPUT_FILES = "input_files"  # the tag of `_ReadLines`' identities


class _ReadLines(beam.DoFn):
    """A matched file -> `((path, line), (sentence, tokens))` per line,
    then `(path, identity)` on the `INPUT_FILES` output: its size and
    modification time, and the sha256 of its content as read
    (decompressed for `.gz`: for a plain file, the sha256 of its bytes,
    as `keras_elmo.embedding.run_identity.input_identity` records it)."""

    def process(self, readable_file):
        metadata = readable_file.metadata
        path = metadata.path
        digest = hashlib.sha256()
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
                digest.update(raw)
                line = decode_line(raw)
                sentence = sentence_text(line).encode(
                    "utf-8", "surrogateescape"
                )
                yield (path, number), (sentence, tuple(sentence_tokens(line)))
                number += 1
        identity = {
            "size": metadata.size_in_bytes,
            "mtime_ns": int(metadata.last_updated_in_seconds * 1e9),
            "sha256": digest.hexdigest(),
        }
        yield beam.pvalue.TaggedOutput(INPUT_FILES, (path, identity))


def _checked_identity(element):
    path, identity = element
    if not isinstance(path, str):
        raise TypeError(f"Expected a (path, identity) pair, got {element!r}.")
    return path, identity


class ReadSentences(beam.PTransform):
    """Sentence-per-line files (globs, `.gz` by name) -> keyed sentences.

    Each line (ending at `\\n`) gives `((path, line_number), (sentence,
    tokens))` exactly as `keras-elmo embed` reads it
    (`keras_elmo.embedding.batching`); blank and non-UTF-8 lines are kept.
    A pattern that matches no file fails the pipeline. Once applied,
    `input_files` is the PCollection of `(path, identity)` per file read.
    """

    def __init__(self, patterns):
        super().__init__()
        self.patterns = list(patterns)
        self.input_files = None

    def expand(self, pbegin):
        read = (
            pbegin
            | "Patterns" >> beam.Create(self.patterns)
            | "Match"
            >> fileio.MatchAll(
                empty_match_treatment=fileio.EmptyMatchTreatment.DISALLOW
            )
            | "Open" >> fileio.ReadMatches()
            | "Lines"
            >> beam.ParDo(_ReadLines()).with_outputs(INPUT_FILES, main="lines")
        )
        # A step of its own: Beam 2.77's BundleBasedDirectRunner hands a
        # side input read straight from a tagged output the main
        # output's elements too.
        self.input_files = read[INPUT_FILES] | "InputFiles" >> beam.Map(
            _checked_identity
        )
        return read.lines


def _flatten(keyed_result):
    key, result = keyed_result
    sentence, tokens = result.example
    return key, sentence, tokens, result.inference, result.model_id


class EmbedBatches(beam.PTransform):
    """Keyed sentences -> `(key, sentence, tokens, vectors, model_id)`.

    RunInference batches them itself, as the handler's batching arguments
    say (sorted by length, `batch_size` sentences per model call), and
    loads the model once per worker process.
    """

    def __init__(self, model_handler):
        super().__init__()
        self.model_handler = model_handler

    def expand(self, sentences):
        handler = KeyedModelHandler(self.model_handler)
        return (
            sentences
            | "RunInference" >> RunInference(handler)
            | "Flatten" >> beam.Map(_flatten)
        )


def embed_corpus(
    pipeline, patterns, output_dir, model_handler, header, num_shards=0
):
    """Adds the whole embedding pipeline to `pipeline`; returns the
    PCollection holding the manifest's path once written.

    Args:
        pipeline: a `beam.Pipeline`.
        patterns: list of str. Input globs (any Beam file system).
        output_dir: str. The output directory (`prepare_output_dir` it
            first).
        model_handler: a `BiLMModelHandler` (model, layers, dtype,
            batching).
        header: dict. Manifest entries (input, options, and `run`, what
            the launcher knows of the run record:
            `keras_elmo.integrations.beam.run_manifest.launch_record`); the
            model's shapes and digest and the input files' identities come from
            the workers.
        num_shards: int. Output shards; 0 lets the runner choose.
    """
    read = ReadSentences(patterns)
    sentences = pipeline | "Read" >> read
    lines_read = sentences | "LinesRead" >> beam.combiners.Count.Globally()
    records = (
        sentences
        | "Spread" >> beam.Reshuffle()
        | "Embed" >> EmbedBatches(model_handler)
    )
    return records | "Write" >> WriteEmbeddings(
        output_dir,
        header,
        model_handler.dtype,
        num_shards,
        lines_read,
        input_files=read.input_files,
    )


def run_embed_corpus(
    pipeline_args, patterns, output_dir, model_handler, header, **kwargs
):
    """Runs `embed_corpus` in a pipeline made from command-line style
    options (`["--runner=FnApiRunner", ...]`); returns when it is done.

    Local runs with several workers (threads or processes) run on
    `SizeFlushedFnApiRunner` (`keras_elmo.integrations.beam.local_runner`:
    Beam's own `FnApiRunner` can drop elements there).
    """
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(list(pipeline_args))
    runner = runner_for(options)  # None: Beam picks from the options
    with beam.Pipeline(runner=runner, options=options) as pipeline:
        embed_corpus(
            pipeline, patterns, output_dir, model_handler, header, **kwargs
        )
