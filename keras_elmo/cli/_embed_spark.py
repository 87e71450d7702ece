"""`keras-elmo embed IN OUT --spark-master URL`: the same embedding on Spark.

    keras-elmo embed corpus.txt out.hdf5 --spark-master spark://host:7077
    keras-elmo embed 'hdfs:///corpus/*.txt' hdfs:///out/ --spark-master yarn

An `.hdf5` OUTPUT gets the `allennlp elmo` layout of the in-process
command (one local input file); any other OUTPUT is a folder that
receives a Parquet dataset and `_manifest.json`
(`keras_elmo.integrations.spark.embed_file`). `--spark-conf KEY=VALUE` sets
Spark options (`spark.executor.memory=4g`). The executors run the command's own
model loader, so the model arguments (`--preset`, `--model`,
`--options/--weights`, `--vocab`) name files every executor can read.
`PYSPARK_PYTHON` names the executors' Python (default here: this interpreter).
Needs `pip install 'keras-elmo[spark]'` and Java 17+.
"""

import json
import os
import sys


def add_spark_arguments(parser):
    group = parser.add_argument_group(
        "Apache Spark (with --spark-master; pip install 'keras-elmo[spark]')"
    )
    group.add_argument(
        "--spark-master",
        default=None,
        metavar="URL",
        help="Run on Spark (spark://host:port, yarn, k8s://..., local[N]): "
        "an .hdf5 OUTPUT gets the embed layout, any other OUTPUT is a "
        "folder of Parquet files + _manifest.json.",
    )
    group.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A Spark option (repeatable), e.g. spark.executor.memory=4g.",
    )


def _conf_pairs(items):
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(
                "Received an invalid value for `--spark-conf`, expected "
                f"KEY=VALUE, got {item!r}."
            )
        pairs.append((key, value))
    return pairs


def _check_args(args):
    from keras_elmo.utils import check_positive_int

    check_positive_int("--batch-size", args.batch_size)
    if args.runner:
        raise ValueError(
            "Give one engine: `--spark-master` or `--runner` (Beam), "
            "received both."
        )
    if args.resume:
        raise ValueError(
            "`--resume` is for the in-process command; Spark re-runs failed "
            "tasks itself (rerun with --force to start over)."
        )
    if getattr(args, "pipeline_options", None):
        raise ValueError(
            f"Unrecognized arguments {args.pipeline_options}: Beam pipeline "
            "options need --runner; Spark options go in --spark-conf."
        )
    _conf_pairs(args.spark_conf)
    if "://" not in args.input and not os.path.exists(args.input):
        raise FileNotFoundError(f"Input {args.input!r} not found.")
    if "://" not in args.output and os.path.exists(args.output):
        if not args.force:
            raise FileExistsError(
                f"Output {args.output!r} exists; pass --force to overwrite it."
                + _finished_run_note(args)
            )


def _finished_run_note(args):
    """What changed since the run a finished local folder output records
    (`keras_elmo.integrations.spark.run_manifest`), read without starting
    Spark."""
    from keras_elmo.cli._model_args import model_spec
    from keras_elmo.embedding.run_identity import finished_run_note
    from keras_elmo.integrations.spark.embed_file import MANIFEST
    from keras_elmo.integrations.spark.run_manifest import current_record

    path = os.path.join(args.output, MANIFEST)
    if "://" in args.input or not os.path.isfile(path):
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            recorded = json.load(f).get("run") or {}
    except (OSError, ValueError, AttributeError):
        return ""
    spec = model_spec(args)
    layers, dtype = args.layers, args.dtype
    return finished_run_note(
        recorded,
        lambda: current_record(None, args.input, spec, None, layers, dtype),
    )


def _absolute(path):
    if path is None or "://" in path:
        return path
    return os.path.abspath(path)


def run_spark(args):
    """Embeds on Spark; returns 0 once the output is complete. Executors
    load the model from the spec of the command's flags
    (`keras_elmo.embedding.model_spec.load_spec`), as the in-process command
    does; the driver does not load it."""
    _check_args(args)
    # keras_elmo.integrations.spark names the extra to install when pyspark is
    # absent.
    from keras_elmo.cli._model_args import model_spec
    from keras_elmo.integrations.spark import embed_text_file
    from keras_elmo.integrations.spark.session import spark_session

    if os.path.isfile(args.input):
        from keras_elmo.cli._corpus_args import check_corpus_from_args

        check_corpus_from_args(
            args, "input", args.input, require_sentences=False
        )
    from keras_elmo.integrations.engine_logging import engine_failures

    output = _absolute(args.output)
    spec = model_spec(args)
    with engine_failures("Spark"):
        spark = spark_session(
            args.spark_master,
            _conf_pairs(args.spark_conf),
            quiet=not args.verbose,
        )
        try:
            result = embed_text_file(
                spark,
                _absolute(args.input),
                output,
                model=spec,
                layers=args.layers,
                batch_size=args.batch_size,
                dtype=args.dtype,
                force=args.force,
            )
        finally:
            spark.stop()
    sys.stderr.write(
        f"Wrote {result['counts']['lines']} sentences to {output}\n"
    )
    return 0
