"""What produced a Spark output: the `run` record of its manifest.

The in-process journal's record (`keras_elmo.embedding.run_identity`),
taken on the driver without loading the model:

- `model`: the digest of the model's files
  (`model_spec.model_files_identity`; a custom `loader`'s model is
  `{"kind": "unverified"}`);
- `input`: `{"files": {path: {size, mtime_ns, sha256}}}` of the files
  the input names (a file, a folder's visible files, or a glob), read on
  the driver; a file on another file system (`hdfs://`, `s3a://`, ...)
  records the size and modification time its Hadoop `FileSystem`
  reports, and no sha256 (it is compared by those two);
- `settings`: `layers` and `dtype`;
- `version`: the keras_elmo version.

A rerun over a finished folder output is refused unless forced; the
refusal names what changed since the recorded run
(`run_identity.finished_run_note`).
"""

import glob
import os

from keras_elmo.embedding.model_spec import model_files_identity
from keras_elmo.embedding.run_identity import input_identity
from keras_elmo.embedding.run_identity import run_record
from keras_elmo.integrations.spark import hadoop_files


def _local_files(path):
    """The files a local input names, as Spark's text source reads them
    (a folder: its files not starting with `_` or `.`)."""
    path = hadoop_files.local_path(path)
    if os.path.isfile(path):
        return [os.path.abspath(path)]
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        found = [os.path.join(path, n) for n in names if n[0] not in "_."]
    else:
        found = sorted(glob.glob(path))
    return [os.path.abspath(p) for p in found if os.path.isfile(p)]


def _remote_files(spark, path):
    return {
        uri: {"size": size, "mtime_ns": mtime_ms * 1_000_000, "sha256": None}
        for uri, size, mtime_ms in hadoop_files.list_files(spark, path)
    }


def input_files(spark, input_path):
    """`{"files": {path: identity}}` of the input (see the module doc)."""
    if hadoop_files.is_local(input_path):
        files = {p: input_identity(p) for p in _local_files(input_path)}
    else:
        files = _remote_files(spark, input_path)
    return {"files": dict(sorted(files.items()))}


def current_record(spark, input_path, model, loader, layers, dtype):
    """This run's record (`spark` may be None for a local input)."""
    from keras_elmo.embedding.model_spec import load_spec
    from keras_elmo.integrations.spark.worker_model import spec_of

    if loader in (None, load_spec):
        identity = model_files_identity(spec_of(model))
    else:
        name = f"{loader.__module__}.{loader.__qualname__}"
        identity = {"kind": "unverified", "loader": name}
    settings = {"layers": layers, "dtype": dtype}
    return run_record(identity, input_files(spark, input_path), settings)
