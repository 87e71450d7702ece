"""What produced a Beam output: the `run` record of its manifest.

The same record as the in-process journal's
(`keras_elmo.embedding.run_identity.run_record`), put together from what
each machine knows, so the launcher loads no model:

- `model`: the launcher's digest of the model's files
  (`model_spec.model_files_identity`: options + weights, or the
  SavedModel's fingerprint, plus the token-cache vocabulary; a published
  name or a URL is recorded by name). The workers' digest of the model
  they loaded (`run_identity.bilm_identity` / `saved_model_identity`,
  as `embed` records it) is the manifest's `model_identity`;
- `input`: `{"files": {path: {size, mtime_ns, sha256}}}`, each taken by
  the worker that read the file, from the bytes it read
  (`keras_elmo.integrations.beam.pipeline`);
- `settings`: `layers` and `dtype` (the model's shapes are the
  manifest's `num_layers`, `dim`, `max_tokens`);
- `version`: the keras_elmo version.

A rerun over a finished output is refused unless forced
(`keras_elmo.integrations.beam.output_dir`); its message names what changed
since the recorded run (`current_record`, `run_identity.changes`), or says that
nothing did.
"""

import hashlib

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from keras_elmo.embedding.model_spec import model_files_identity
from keras_elmo.embedding.run_identity import run_record

BLOCK = 1 << 20


def launch_record(spec, layers, dtype):
    """The run record as the launcher knows it (`input` None: the
    workers add it)."""
    settings = {"layers": layers, "dtype": dtype}
    return run_record(model_files_identity(spec), None, settings)


def completed_record(header, model_identity, input_files):
    """The manifest's `run`: the launcher's record from `header["run"]`
    (or, for a pipeline built without one, the workers' model digest and
    the header's `layers` and `dtype`), with the input files' identities
    (`{path: identity}`) the readers took."""
    record = header.get("run")
    if record is None:
        settings = {"layers": header.get("layers"), "dtype": header["dtype"]}
        record = run_record(model_identity, None, settings)
    return dict(record, input={"files": dict(sorted(input_files.items()))})


def file_identity(metadata):
    """`{size, mtime_ns, sha256}` of a matched file (`FileMetadata`), its
    content read as `keras_elmo.integrations.beam.pipeline` reads it
    (decompressed for `.gz`)."""
    digest = hashlib.sha256()
    with FileSystems.open(
        metadata.path,
        mime_type="application/octet-stream",
        compression_type=CompressionTypes.AUTO,
    ) as f:
        for block in iter(lambda: f.read(BLOCK), b""):
            digest.update(block)
    return {
        "size": metadata.size_in_bytes,
        "mtime_ns": int(metadata.last_updated_in_seconds * 1e9),
        "sha256": digest.hexdigest(),
    }


def current_record(launch, patterns):
    """`launch` (`launch_record`) with the identities of the files that
    `patterns` match now (read here, on the launcher: only done to
    compare with a finished output)."""
    files = {}
    for result in FileSystems.match(list(patterns)):
        for metadata in result.metadata_list:
            files[metadata.path] = file_identity(metadata)
    return dict(launch, input={"files": dict(sorted(files.items()))})
