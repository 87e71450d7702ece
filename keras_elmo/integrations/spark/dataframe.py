"""`embed_dataframe`: ELMo vectors for a text column of a Spark DataFrame."""

import functools

from keras_elmo.embedding.batching import check_layers
from keras_elmo.embedding.model_spec import load_spec
from keras_elmo.integrations.spark.arrow_batches import DTYPES
from keras_elmo.integrations.spark.arrow_batches import OUTPUT_FIELDS
from keras_elmo.integrations.spark.arrow_batches import embed_record_batches
from keras_elmo.integrations.spark.worker_model import cached_embedder
from keras_elmo.integrations.spark.worker_model import spec_of
from keras_elmo.utils import check_positive_int


def _get(loader, spec):
    return cached_embedder(loader, spec)


def _map_batches(
    batches, column, loader, spec, layers, batch_size, dtype, prepare=None
):
    if prepare is not None:
        batches = prepare(batches)
    return embed_record_batches(
        batches,
        column,
        functools.partial(_get, loader, spec),
        layers,
        batch_size,
        dtype,
    )


def check_options(layers, batch_size, dtype):
    """Raises a `ValueError` naming the first invalid option."""
    check_layers(layers)
    check_positive_int("batch_size", batch_size)
    if dtype not in DTYPES:
        raise ValueError(
            "Received an invalid value for argument `dtype`, expected one "
            f"of {tuple(DTYPES)}, got {dtype!r}."
        )


def embed_dataframe(
    df,
    column,
    model="elmo_small_en",
    layers="all",
    batch_size=64,
    dtype="float32",
    loader=None,
):
    """Adds ELMo vectors of `df[column]` as `tokens`, `shape`, `vectors`.

    Runs `DataFrame.mapInArrow`: each Python worker loads the model once
    (`keras_elmo.integrations.spark.worker_model`) and embeds its rows in
    length-sorted batches (`keras_elmo.integrations.spark.arrow_batches`),
    exactly as `keras-elmo embed` embeds a line: the same tokens, the same
    `[L + 1, n, 2P]` layers. Lazy, as any transformation: nothing runs
    until an action.

    Args:
        df: a `pyspark.sql.DataFrame`.
        column: str. A string (or binary, UTF-8) column, one sentence per
            row; tokens are its whitespace-split pieces.
        model: any model source `keras_elmo.presets.sources.resolve_model`
            accepts (the shipped `elmo_small_en`, a published name, a
            folder, a `.zip`, an `http(s)://` URL, `hf://owner/repo`, a
            SavedModel, a `.keras` file), readable on every executor; or
            a model spec dict (`keras_elmo.embedding.model_spec`).
        layers: str. `"all"` (`[L + 1, n, 2P]`), `"top"` or `"average"`
            (`[n, 2P]`).
        batch_size: int. Sentences per model call.
        dtype: str. `"float32"` or `"float16"`: the stored `vectors`.
        loader: None or a module-level callable `spec -> (embedder,
            description)` importable on the executors; by default
            `keras_elmo.embedding.model_spec.load_spec`, the loader of every
            bulk-embedding engine.

    Returns:
        A DataFrame with `df`'s columns and `tokens` (array<string>),
        `shape` (array<int>) and `vectors` (binary: little-endian
        `float32` / `float16`, row-major; `np.frombuffer(v,
        "<f4").reshape(shape)`).

    Example:

    ```python
    spark_elmo = keras_elmo.integrations.spark
    out = spark_elmo.embed_dataframe(df, "text", layers="top")
    row = out.first()
    vectors = np.frombuffer(row.vectors, "<f4").reshape(row.shape)
    ```
    """
    from pyspark.sql import types as T

    check_options(layers, batch_size, dtype)
    if column not in df.columns:
        raise ValueError(
            f"Received an invalid value for argument `column`, expected one "
            f"of the DataFrame's columns {df.columns}, got {column!r}."
        )
    kind = df.schema[column].dataType
    if not isinstance(kind, (T.StringType, T.BinaryType)):
        raise ValueError(
            f"Column {column!r} must be a string or binary column, got "
            f"{kind.simpleString()}."
        )
    taken = sorted({name for name, _ in OUTPUT_FIELDS} & set(df.columns))
    if taken:
        raise ValueError(
            f"The DataFrame already has column(s) {taken}, which "
            "embed_dataframe adds; rename or drop them first."
        )
    return map_embed(
        df, column, df.schema.fields, model, layers, batch_size, dtype, loader
    )


def map_embed(
    df,
    column,
    fields,
    model,
    layers,
    batch_size,
    dtype,
    loader=None,
    prepare=None,
):
    """`df.mapInArrow` of the embedding: `prepare(batches)` (a module-level
    function, or None) first turns `df`'s batches into batches of
    `fields` (a list of `StructField`), in the same Python worker; the
    output has `fields` plus `tokens`, `shape`, `vectors`. The executors
    run this interpreter where the session names no Python
    (`session.use_this_python`)."""
    from pyspark.sql import types as T

    from keras_elmo.integrations.spark.session import use_this_python

    use_this_python(df.sparkSession)
    schema = T.StructType(
        list(fields)
        + [
            T.StructField("tokens", T.ArrayType(T.StringType())),
            T.StructField("shape", T.ArrayType(T.IntegerType())),
            T.StructField("vectors", T.BinaryType()),
        ]
    )
    function = functools.partial(
        _map_batches,
        column=column,
        loader=loader or load_spec,
        spec=spec_of(model),
        layers=layers,
        batch_size=batch_size,
        dtype=dtype,
        prepare=prepare,
    )
    return df.mapInArrow(function, schema)
