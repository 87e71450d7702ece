"""Gathers a Spark embedding run into the `allennlp elmo` HDF5 layout.

The layout `keras-elmo embed` writes: a float32 dataset `"i"` per input
line `i`, and `sentence_to_index`, the JSON `{sentence: "i"}` built by
the in-process command's own `sentence_to_index_json` from the input file
(read on the driver, so a local path). Steps:

1. the embedded rows are materialised on the executors
   (`persist(DISK_ONLY)` + a count: all tasks in parallel);
2. the counts check (`keras_elmo.spark.output_counts`) on them;
3. the driver fetches them partition by partition (`toLocalIterator`, a
   partition in memory at a time) into `OUTPUT.partial`, which is
   renamed to OUTPUT once the index is written.

A lost executor loses its cached partitions; Spark recomputes them from
the input when they are fetched (the biLM is deterministic), so the
output is the same. A failure leaves OUTPUT untouched.
"""

import contextlib
import os

import numpy as np

from keras_elmo.spark import hadoop_files
from keras_elmo.spark.output_counts import CountsMismatch
from keras_elmo.spark.output_counts import check_counts

PARTIAL_SUFFIX = ".partial"
SENTENCE_TO_INDEX = "sentence_to_index"


def _input_file(input_path, totals):
    """The local path of the one input file (`input_path` itself, or the
    file a folder or glob matched)."""
    path = hadoop_files.local_path(input_path)
    if os.path.isfile(path) or not totals:
        return path
    from urllib.parse import unquote

    return unquote(hadoop_files.local_path(next(iter(totals))))


def gather_hdf5(rows, totals, input_path, output, layers, header):
    """Writes `rows` (file, line, tokens, shape, vectors; float32) of one
    input file to the HDF5 file `output`; returns `header` with the
    counts and the layout."""
    import h5py
    from pyspark import StorageLevel

    from keras_elmo.export.sentence_index import sentence_to_index_json

    if len(totals) > 1:
        raise ValueError(
            f"An HDF5 output holds one input file's lines; {input_path!r} "
            f"names {len(totals)} files. Write a folder (Parquet) instead."
        )
    if not hadoop_files.is_local(input_path):
        raise ValueError(
            "An HDF5 output reads `sentence_to_index` from the input on the "
            f"driver; {input_path!r} is not a local path. Write a folder "
            "(Parquet) instead."
        )
    rows = rows.persist(StorageLevel.DISK_ONLY)
    try:
        rows.count()
        counts, layout = check_counts(rows, totals, layers)
        partial = output + PARTIAL_SUFFIX
        seen = 0
        with h5py.File(partial, "w") as out:
            for row in rows.select("line", "shape", "vectors").toLocalIterator(
                prefetchPartitions=True
            ):
                vectors = np.frombuffer(row["vectors"], "<f4")
                out.create_dataset(
                    str(row["line"]),
                    data=vectors.reshape(row["shape"]),
                    dtype="float32",
                )
                seen += 1
            if seen != counts["lines"]:
                raise CountsMismatch(
                    f"Fetched {seen} rows for {counts['lines']} lines."
                )
            index = sentence_to_index_json(_input_file(input_path, totals))
            dataset = out.create_dataset(
                SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype("utf-8")
            )
            dataset[0] = index
        os.replace(partial, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError, NameError):
            os.remove(partial)
        raise
    finally:
        rows.unpersist()
    header.update(layout, counts=counts)
    return header
