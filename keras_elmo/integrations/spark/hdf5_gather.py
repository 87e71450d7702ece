"""Gathers a Spark embedding run into the `allennlp elmo` HDF5 layout.

The layout `keras-elmo embed` writes: a float32 dataset `"i"` per input
line `i`, and `sentence_to_index`, the JSON `{sentence: "i"}` built by
the in-process command's own `sentence_to_index_json` from the input file
(read on the driver, so a local path). Steps:

1. the embedded rows are materialised on the executors
   (`persist(DISK_ONLY)` + a count: all tasks in parallel);
2. the driver fetches them partition by partition (`toLocalIterator`, a
   partition in memory at a time) into `OUTPUT.partial`;
3. the counts check, on the driver, on every line number it received:
   each of `0 .. lines - 1` exactly once (`CountsMismatch` otherwise);
4. `sentence_to_index` is written, and the run record the driver took
   (`header["run"]`, the `run` a folder output's `_manifest.json` holds:
   the model's file digests, the input file's identity, the settings,
   the version) as the root attribute `keras_elmo_run`
   (`run_identity.RUN_ATTRIBUTE`, as `keras-elmo embed` writes it);
   `OUTPUT.partial` is renamed to OUTPUT.

A lost executor loses its cached partitions; Spark recomputes them from
the input when they are fetched (the biLM is deterministic), so the
output is the same. A failure leaves OUTPUT untouched.
"""

import contextlib
import os

import numpy as np

from keras_elmo.integrations.spark import hadoop_files
from keras_elmo.integrations.spark.output_counts import CountsMismatch

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

    from keras_elmo.embedding.hdf5_output import sentence_to_index_json
    from keras_elmo.embedding.run_identity import set_run_attribute

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
    lines = int(sum(totals.values()))
    partial = output + PARTIAL_SUFFIX
    rows = rows.persist(StorageLevel.DISK_ONLY)
    try:
        rows.count()
        seen = np.zeros(lines, np.int64)
        counts = {"files": len(totals), "lines": lines, "tokens": 0}
        counts["blank_lines"] = 0
        layout = {"num_layers": None, "dim": None}
        fetched = rows.select("line", "tokens", "shape", "vectors")
        with h5py.File(partial, "w") as out:
            for row in fetched.toLocalIterator(prefetchPartitions=True):
                line = row["line"]
                if not 0 <= line < lines or seen[line]:
                    raise CountsMismatch(
                        f"{input_path}: line {line} is out of 0..{lines - 1}"
                        " or came twice; no output written."
                    )
                seen[line] = 1
                vectors = np.frombuffer(row["vectors"], "<f4")
                out.create_dataset(
                    str(line), data=vectors.reshape(row["shape"])
                )
                counts["tokens"] += len(row["tokens"])
                counts["blank_lines"] += not row["tokens"]
                layout["dim"] = int(row["shape"][-1])
                if layers == "all":
                    layout["num_layers"] = int(row["shape"][0])
            if not seen.all():
                raise CountsMismatch(
                    f"{input_path}: {lines} lines read, {int(seen.sum())} "
                    "embedded; no output written."
                )
            if layers != "all":
                layout["num_layers"] = 1
            index = sentence_to_index_json(_input_file(input_path, totals))
            dataset = out.create_dataset(
                SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype("utf-8")
            )
            dataset[0] = index
            if header.get("run"):
                set_run_attribute(out, header["run"])
        os.replace(partial, output)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)
        raise
    finally:
        rows.unpersist()
    header.update(layout, counts=counts)
    return header
