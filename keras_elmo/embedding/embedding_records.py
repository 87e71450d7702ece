"""Sentence embeddings as TFRecord shards of `tf.train.Example`, a manifest,
and the converter to the `allennlp elmo` HDF5 layout.

Written by `keras-elmo embed --runner` (`keras_elmo.integrations.beam`), one
record per input line, readable by anything that reads TFRecord (`tf.data`,
Spark's `spark-tfrecord`, `tfx_bsl`, Beam's `ReadFromTFRecord`). Features:

- `file`: bytes [1]. The input file the line came from (its path as the
  runner matched it);
- `line`: int64 [1]. The 0-based line number in that file;
- `sentence`: bytes [1]. The line stripped of surrounding whitespace (its
  original bytes, also when they are not valid UTF-8);
- `tokens`: bytes [n]. Its whitespace-split tokens (`str.split()`);
- `shape`: int64 [2 or 3]. `(L + 1, m, 2P)` with `all` layers, `(m, 2P)`
  with `top` or `average`, where `m = min(n, max_tokens)`;
- `vectors`: the array, row-major: a float list for `float32`, or one
  bytes value of little-endian IEEE half floats for `float16`
  (`np.frombuffer(v, "<f2")`).

The output directory holds `embeddings-SSSSS-of-NNNNN.tfrecord` shards and
`manifest.json` (`MANIFEST`), written after every shard is final: the run's
options, the model, the shard names and the counts (`lines`, `tokens`,
`blank_lines`, `not_utf8_lines`, `truncated_lines`; no line is skipped, as
in `keras-elmo embed`). `records_to_hdf5` turns a small output into the
HDF5 file `keras-elmo embed` writes for the same lines: the files in sorted
order count as one file, so with one input file the datasets are
byte-for-byte those of `keras-elmo embed --force`.
"""

import json
import os

import numpy as np

from keras_elmo.utils.atomic import atomic_path

MANIFEST = "manifest.json"
SHARD_PREFIX = "embeddings"
SHARD_SUFFIX = ".tfrecord"
FORMAT = "keras-elmo embedding records, version 1"
DTYPES = ("float32", "float16")
COUNTS = (
    "lines",
    "tokens",
    "embedded_tokens",
    "blank_lines",
    "not_utf8_lines",
    "truncated_lines",
)


def encode_record(path, line, sentence, tokens, vectors, dtype="float32"):
    """One line's embedding as a serialized `tf.train.Example` (bytes).

    Args:
        path: str. The input file.
        line: int. The 0-based line number.
        sentence: bytes. The stripped line.
        tokens: list of bytes.
        vectors: float array, `(L + 1, m, 2P)` or `(m, 2P)`.
        dtype: `"float32"` or `"float16"`.
    """
    import tensorflow as tf

    feature = tf.train.Feature
    array = np.asarray(vectors)
    if dtype == "float32":
        # A list of Python floats (each a float32 value exactly): protobuf
        # fills a repeated field from a list about 6x faster than from a
        # NumPy array, element by element (0.14 ms against 0.80 ms for a
        # 21-token sentence of 256 values; benchmarks/beam_embed.py).
        values = feature(
            float_list=tf.train.FloatList(
                value=array.astype(np.float32).ravel().tolist()
            )
        )
    elif dtype == "float16":
        data = array.astype("<f2").tobytes()
        values = feature(bytes_list=tf.train.BytesList(value=[data]))
    else:
        raise ValueError(
            f"Received an invalid value for argument `dtype`, expected one "
            f"of {DTYPES}, got {dtype!r}."
        )
    features = {
        "file": feature(
            bytes_list=tf.train.BytesList(
                value=[path.encode("utf-8", "surrogateescape")]
            )
        ),
        "line": feature(int64_list=tf.train.Int64List(value=[line])),
        "sentence": feature(bytes_list=tf.train.BytesList(value=[sentence])),
        "tokens": feature(bytes_list=tf.train.BytesList(value=list(tokens))),
        "shape": feature(int64_list=tf.train.Int64List(value=array.shape)),
        "vectors": values,
    }
    example = tf.train.Example(features=tf.train.Features(feature=features))
    return example.SerializeToString()


def decode_record(serialized):
    """A serialized record -> dict `file, line, sentence, tokens, vectors`
    (`vectors` a float32 or float16 array of its stored shape)."""
    import tensorflow as tf

    feature = tf.train.Example.FromString(serialized).features.feature
    shape = tuple(feature["shape"].int64_list.value)
    stored = feature["vectors"]
    if stored.HasField("float_list"):
        vectors = np.asarray(stored.float_list.value, np.float32)
    else:
        vectors = np.frombuffer(stored.bytes_list.value[0], "<f2")
    return {
        "file": feature["file"]
        .bytes_list.value[0]
        .decode("utf-8", "surrogateescape"),
        "line": int(feature["line"].int64_list.value[0]),
        "sentence": feature["sentence"].bytes_list.value[0],
        "tokens": list(feature["tokens"].bytes_list.value),
        "vectors": vectors.reshape(shape),
    }


def read_manifest(output_dir):
    """The manifest dict of an output directory (local path)."""
    path = os.path.join(output_dir, MANIFEST)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{output_dir!r} has no {MANIFEST}: not the output of a "
            "finished bulk embedding run (Beam)."
        )
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    if manifest.get("format") != FORMAT:
        raise ValueError(
            f"{path!r} has format {manifest.get('format')!r}, expected "
            f"{FORMAT!r}."
        )
    return manifest


def iter_records(output_dir, manifest=None):
    """Yields the decoded records of every shard the manifest lists."""
    import tensorflow as tf

    manifest = manifest or read_manifest(output_dir)
    for name in manifest["shards"]:
        path = os.path.join(output_dir, name)
        for serialized in tf.data.TFRecordDataset(path).as_numpy_iterator():
            yield decode_record(serialized)


def records_to_hdf5(output_dir, hdf5_path, force=False):
    """Writes the `allennlp elmo` HDF5 layout of a (small) output directory.

    Line `i` of file `f` (files in sorted order) gets the dataset
    `str(offset(f) + i)`, float32; `sentence_to_index` is the JSON
    `{sentence: "index"}` AllenNLP writes (a repeated sentence maps to its
    last index). Every index must occur exactly once. Memory: the sentences.
    The manifest's `run` (what produced the records) becomes the root
    attribute `keras_elmo_run`, as `keras-elmo embed` writes it
    (`run_identity.RUN_ATTRIBUTE`).

    Returns:
        The number of datasets written.
    """
    import h5py

    from keras_elmo.embedding.run_identity import set_run_attribute

    if os.path.exists(hdf5_path) and not force:
        raise FileExistsError(
            f"Output {hdf5_path!r} exists; pass `force=True` to overwrite it."
        )
    manifest = read_manifest(output_dir)
    offsets, total = {}, 0
    for path in sorted(manifest["files"]):
        offsets[path] = total
        total += manifest["files"][path]
    sentences = [None] * total
    with atomic_path(hdf5_path) as tmp, h5py.File(tmp, "w") as out:
        for record in iter_records(output_dir, manifest):
            index = offsets[record["file"]] + record["line"]
            if sentences[index] is not None:
                raise ValueError(
                    f"{output_dir!r}: line {record['line']} of "
                    f"{record['file']!r} occurs twice in the shards."
                )
            sentences[index] = record["sentence"]
            out.create_dataset(
                str(index), data=record["vectors"], dtype="float32"
            )
        missing = [i for i, s in enumerate(sentences) if s is None]
        if missing:
            raise ValueError(
                f"{output_dir!r}: the shards lack {len(missing)} of the "
                f"{total} lines the manifest counts (first: {missing[0]})."
            )
        index = {}
        for i, sentence in enumerate(sentences):
            index[sentence.decode("utf-8", "surrogateescape")] = str(i)
        data = out.create_dataset(
            "sentence_to_index", (1,), dtype=h5py.string_dtype("utf-8")
        )
        data[0] = json.dumps(index).encode("ascii")
        if manifest.get("run"):  # what produced the records, kept
            set_run_attribute(out, manifest["run"])
    return total
