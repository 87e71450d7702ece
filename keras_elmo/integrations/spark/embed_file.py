"""`embed_text_file`: a sentence-per-line corpus -> Parquet or HDF5, on Spark.

A folder OUTPUT receives a Parquet dataset, one row per input line:

| column | type | what |
| --- | --- | --- |
| `file` | string | the input file (as Spark names it, `file:/...`) |
| `line` | long | its 0-based line number |
| `sentence` | string | the line stripped (not-UTF-8 bytes as U+FFFD) |
| `tokens` | array<string> | its `str.split()` tokens (the same) |
| `shape` | array<int> | `(L + 1, m, 2P)` or `(m, 2P)` |
| `vectors` | binary | the array, little-endian `float32` / `float16` |

then, after the counts check (`keras_elmo.integrations.spark.output_counts`),
the manifest `_manifest.json` (`MANIFEST`; Spark and pyarrow skip `_` files when
they read the folder): options, model, counts, and `run`, what produced it
(`keras_elmo.integrations.spark.run_manifest`: the model's file digests, each
input file's size, mtime and sha256, the settings, the version). The manifest is
written last: a folder without it is not a finished run. A rerun over a finished
folder is refused unless `force`, naming what changed since the recorded run.
Spark's file commit protocol keeps one attempt's output per task, so a task
re-run after a lost executor is written once.

The input is read in splits sized for the model's compute, not for
reading (`keras_elmo.integrations.spark.input_splits`): every core gets work,
even from one small file, unless the session sets its own split sizes.

An `.hdf5` (or `.h5`) OUTPUT gets the `allennlp elmo` layout that
`keras-elmo embed` writes (`keras_elmo.integrations.spark.hdf5_gather`), for
corpora that fit one file on the driver.
"""

import json
import logging

from keras_elmo.embedding.run_identity import finished_run_note
from keras_elmo.integrations.spark import hadoop_files
from keras_elmo.integrations.spark.dataframe import check_options
from keras_elmo.integrations.spark.dataframe import map_embed
from keras_elmo.integrations.spark.input_splits import compute_splits
from keras_elmo.integrations.spark.output_counts import check_counts
from keras_elmo.integrations.spark.output_counts import read_back
from keras_elmo.integrations.spark.run_manifest import current_record
from keras_elmo.integrations.spark.text_lines import lines_fields
from keras_elmo.integrations.spark.text_lines import read_lines

logger = logging.getLogger(__name__)

MANIFEST = "_manifest.json"
FORMAT = "keras-elmo spark parquet"
HDF5_SUFFIXES = (".hdf5", ".h5")
COLUMNS = ("file", "line", "sentence", "tokens", "shape", "vectors")


def _describe(model, loader):
    """The manifest's `model` of the default loader's spec, as Beam's
    manifest names it; a custom loader's spec as given."""
    from keras_elmo.embedding.model_spec import describe_model
    from keras_elmo.embedding.model_spec import load_spec
    from keras_elmo.integrations.spark.worker_model import spec_of

    if loader in (None, load_spec):
        return describe_model(spec_of(model))
    return str(model)


def embed_lines(spark, input_path, model, layers, batch_size, dtype, loader):
    """`(rows, totals)`: the embedded lines of `input_path` (the
    `COLUMNS`) and `{file: lines}`, lazily."""
    raw, numbering, totals = read_lines(spark, input_path)
    embedded = map_embed(
        raw,
        "text",
        lines_fields(),
        model,
        layers,
        batch_size,
        dtype,
        loader=loader,
        prepare=numbering,
    )
    return embedded.select(*COLUMNS), totals


def embed_text_file(
    spark,
    input_path,
    output,
    model="elmo_small_en",
    layers="all",
    batch_size=64,
    dtype="float32",
    force=False,
    loader=None,
    description=None,
):
    """Embeds every line of `input_path` into `output`; returns the
    manifest (a dict; for HDF5 output, what the run checked).

    Args:
        spark: a `pyspark.sql.SparkSession` (classic, not Spark Connect).
        input_path: str. A file, glob or folder any executor can read
            (`hdfs://`, `s3a://`, ... or a local path on every machine).
        output: str. A folder (Parquet dataset + manifest), or a local
            `.hdf5` file (one input file; float32).
        model, layers, batch_size, dtype, loader: as
            `keras_elmo.integrations.spark.embed_dataframe`.
        force: bool. Replace an existing output.
        description: str or None. The model, for the manifest; by
            default named as `load_spec` names it (and Beam's manifest
            does): `model_spec.describe_model`, e.g. "shipped preset
            elmo_small_en" (a custom `loader`'s spec: as given).

    Raises:
        FileExistsError: `output` exists and not `force` (for a finished
            folder, the message names what changed since its run).
        keras_elmo.integrations.spark.output_counts.CountsMismatch: the output
        lost or
            doubled a line (no manifest, no HDF5 file).
    """
    check_options(layers, batch_size, dtype)

    def current():
        return current_record(spark, input_path, model, loader, layers, dtype)

    header = {
        "format": FORMAT,
        "version": 1,
        "input": input_path,
        "layers": layers,
        "dtype": dtype,
        "batch_size": batch_size,
        "model": description or _describe(model, loader),
        "columns": list(COLUMNS),
    }
    if output.endswith(HDF5_SUFFIXES):
        from keras_elmo.integrations.spark.hdf5_gather import gather_hdf5

        if dtype != "float32":
            raise ValueError(
                "An HDF5 output holds float32 (the `allennlp elmo` layout); "
                f"received dtype {dtype!r}. Write a folder for float16."
            )
        if hadoop_files.exists(spark, output) and not force:
            raise FileExistsError(
                f"Output {output!r} exists; pass force=True to overwrite it."
            )
        header["run"] = current()
        with compute_splits(spark, _input_sizes(header["run"])):
            rows, totals = embed_lines(
                spark, input_path, model, layers, batch_size, dtype, loader
            )
            return gather_hdf5(rows, totals, input_path, output, layers, header)
    manifest = hadoop_files.join(output, MANIFEST)
    if hadoop_files.exists(spark, output):
        if not force:
            note = finished_run_note(_recorded_run(spark, output), current)
            raise FileExistsError(
                f"Output {output!r} exists; pass force=True to replace it."
                + note
            )
        hadoop_files.delete(spark, manifest)  # first: not done until new
    header["run"] = current()
    with compute_splits(spark, _input_sizes(header["run"])):
        rows, totals = embed_lines(
            spark, input_path, model, layers, batch_size, dtype, loader
        )
        mode = "overwrite" if force else "errorifexists"
        rows.write.mode(mode).parquet(output)
    written = read_back(spark, output, rows.schema)
    counts, layout = check_counts(written, totals, layers)
    header.update(layout, counts=counts)
    hadoop_files.write_text(
        spark, manifest, json.dumps(header, indent=1, sort_keys=True)
    )
    logger.info("Wrote %d lines to %s", counts["lines"], output)
    return header


def _input_sizes(record):
    """The input files' sizes in bytes, from a run record."""
    return [item["size"] for item in record["input"]["files"].values()]


def _recorded_run(spark, output):
    """The `run` of the finished folder `output` (`{}` if its manifest
    records none), or None without a readable manifest."""
    try:
        manifest = read_manifest(spark, output)
    except Exception:  # noqa: BLE001 - no manifest: not a finished run
        return None
    return manifest.get("run") or {} if isinstance(manifest, dict) else None


def read_manifest(spark, output):
    """The manifest of a finished folder output (a dict)."""
    if hadoop_files.is_local(output):
        path = hadoop_files.local_path(hadoop_files.join(output, MANIFEST))
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    text = spark.read.text(hadoop_files.join(output, MANIFEST), wholetext=True)
    return json.loads(text.first()[0])
