"""`keras-elmo embed --runner NAME`: the same embedding on Apache Beam.

    keras-elmo embed 'corpus/*.txt.gz' out/ --runner FnApiRunner \\
        --direct_num_workers=2 --direct_running_mode=multi_processing

INPUT is a glob of sentence-per-line files (`.gz` read as gzip), OUTPUT a
directory that receives `embeddings-SSSSS-of-NNNNN.tfrecord` shards and
`manifest.json` (`keras_elmo.embedding.embedding_records`). Any other
`--name=value` options are Beam pipeline options (`--project=...`,
`--temp_location=gs://...`); give them with `=`. `keras-elmo
embed-records OUTPUT out.hdf5` converts a small output to the HDF5 file
the in-process command writes. Needs `pip install 'keras-elmo[beam]'`.
"""

import logging
import os
import sys

from keras_elmo.cli._model_args import model_spec
from keras_elmo.embedding.batching import BATCHINGS

logger = logging.getLogger(__name__)

# The flags that only a Beam run reads, with their defaults and what they
# do: given without --runner they are refused (`refuse_beam_only_flags`),
# never silently ignored.
BEAM_ONLY_FLAGS = {
    "batch_tokens": (4096, "bounds each Beam model call's padded tokens"),
    "num_shards": (0, "sets the number of Beam output shards"),
    "batching": (BATCHINGS[0], "chooses how Beam forms batches"),
    "worker_threads": (None, "sizes Beam worker processes"),
}


def add_beam_arguments(parser):
    group = parser.add_argument_group(
        "Apache Beam (with --runner; pip install 'keras-elmo[beam]')"
    )
    group.add_argument(
        "--runner",
        default=None,
        help="Run on Apache Beam with this runner (FnApiRunner, "
        "DirectRunner, DataflowRunner, FlinkRunner, SparkRunner, ...): "
        "INPUT is then a glob, OUTPUT a directory of TFRecord shards; "
        "other --name=value options go to Beam.",
    )
    group.add_argument(
        "--dtype",
        default="float32",
        choices=("float32", "float16"),
        help="Stored float type (Beam and Spark runs).",
    )
    group.add_argument(
        "--batch-tokens",
        type=int,
        default=BEAM_ONLY_FLAGS["batch_tokens"][0],
        help="Padded tokens per model call at most (Beam runs).",
    )
    group.add_argument(
        "--num-shards",
        type=int,
        default=BEAM_ONLY_FLAGS["num_shards"][0],
        help="Output shards (Beam runs; 0: the runner chooses).",
    )
    group.add_argument(
        "--batching",
        default=BEAM_ONLY_FLAGS["batching"][0],
        choices=BATCHINGS,
        help="How Beam forms batches (Beam runs): 'bundles' sorts 16 x "
        "--batch-size sentences of a bundle by length (fast on every "
        "runner); 'length-keys' uses Beam's stateful length buckets "
        "(state calls per sentence; slow on the local runner).",
    )
    group.add_argument(
        "--worker-threads",
        type=int,
        default=BEAM_ONLY_FLAGS["worker_threads"][0],
        help="TensorFlow threads per pool in each Beam worker process "
        "(default: cores // --direct_num_workers for local "
        "multi_processing runs, else TensorFlow's one per core; give 1 "
        "on runners with one worker process per core, e.g. Dataflow).",
    )


def refuse_beam_only_flags(args):
    """Raises `ValueError` naming the first `BEAM_ONLY_FLAGS` entry whose
    value differs from its default in a run without --runner."""
    for name, (default, what) in BEAM_ONLY_FLAGS.items():
        value = getattr(args, name, default)
        if value != default:
            flag = "--" + name.replace("_", "-")
            raise ValueError(
                f"`{flag}` {what}; it needs --runner (received "
                f"{flag} {value} without it)."
            )


def _set_file_system_options(pipeline_args):
    """Gives Beam's `FileSystems` the pipeline options before the output
    directory is prepared: S3 (`--s3_endpoint_url`, credentials, ...),
    HDFS (`--hdfs_host`, `--hdfs_port`, `--hdfs_user`) and GCS read their
    settings from them, and outside a `Pipeline` they have none."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    FileSystems.set_options(PipelineOptions(list(pipeline_args)))


def run_beam(args):
    """Builds and runs the pipeline; returns 0 once the manifest is there.

    Workers load the model from the spec of the command's flags
    (`keras_elmo.embedding.model_spec.load_spec`), as the in-process command
    does; this process never loads it: the manifest's run record digests
    the model's files (`keras_elmo.integrations.beam.run_manifest`).
    """
    from keras_elmo.integrations.engine_logging import engine_failures
    from keras_elmo.integrations.engine_logging import quiet_engine_logs
    from keras_elmo.utils import check_int_at_least
    from keras_elmo.utils import check_positive_int

    # Before Beam is imported: some of its modules log on import (a
    # missing optional client: "apitools not found ...").
    quiet_engine_logs(args.verbose)
    check_positive_int("--batch-size", args.batch_size)
    check_positive_int("--batch-tokens", args.batch_tokens)
    check_int_at_least(
        "--num-shards", args.num_shards, 0, "a non-negative integer"
    )
    check_positive_int("--worker-threads", args.worker_threads, True)
    if args.resume:
        raise ValueError(
            "`--resume` is for the in-process command; a Beam runner "
            "retries failed work itself (rerun with --force to start over)."
        )
    # keras_elmo.integrations.beam names the extra to install when apache-beam
    # is absent.
    from keras_elmo.integrations.beam import BiLMModelHandler
    from keras_elmo.integrations.beam import prepare_output_dir
    from keras_elmo.integrations.beam import run_embed_corpus
    from keras_elmo.integrations.beam.model_handler import (
        default_worker_threads,
    )
    from keras_elmo.integrations.beam.model_handler import describe_spec
    from keras_elmo.integrations.beam.run_manifest import current_record
    from keras_elmo.integrations.beam.run_manifest import launch_record

    pattern = _absolute(args.input)
    output = _absolute(args.output)
    spec = model_spec(args)
    pipeline_args = [f"--runner={args.runner}"]
    pipeline_args += list(args.pipeline_options or [])
    _set_file_system_options(pipeline_args)
    header = describe_spec(spec)  # the workers load the model
    launch = launch_record(spec, args.layers, args.dtype)  # file digests
    header.update(input=pattern, layers=args.layers, run=launch)
    threads = args.worker_threads
    if threads is None:
        threads = default_worker_threads(pipeline_args)
    handler = BiLMModelHandler(
        spec,
        layers=args.layers,
        dtype=args.dtype,
        batch_size=args.batch_size,
        batch_tokens=args.batch_tokens,
        threads=threads,
        batching=args.batching,
    )
    prepare_output_dir(
        output,
        force=args.force,
        current=lambda: current_record(launch, [pattern]),
    )
    logger.info("Embedding %s with %s on %s", pattern, header, args.runner)
    with engine_failures("Beam"):
        run_embed_corpus(
            pipeline_args,
            [pattern],
            output,
            handler,
            header,
            num_shards=args.num_shards,
        )
    manifest = read_manifest_any(output)
    sys.stderr.write(
        f"Wrote {manifest['counts']['lines']} sentences in "
        f"{manifest['counts']['shards']} shards to {output}\n"
    )
    return 0


def read_manifest_any(output_dir):
    """The manifest of a finished run, on any Beam file system."""
    import json

    from apache_beam.io.filesystems import FileSystems

    from keras_elmo.embedding.embedding_records import MANIFEST

    with FileSystems.open(FileSystems.join(output_dir, MANIFEST)) as f:
        return json.loads(f.read())


def _absolute(path):
    """Local paths become absolute (workers may run elsewhere)."""
    if path is None or "://" in path:
        return path
    return os.path.abspath(path)
