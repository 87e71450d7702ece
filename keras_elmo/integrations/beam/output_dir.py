"""The output directory of a Beam run: never mix old and new shards.

A run writes `embeddings-*.tfrecord` shards and `manifest.json` into its
output directory (and, while it writes them, Beam's temporary folder
`beam-temp-embeddings-*` and `manifest.json.tmp`).
A rerun over a directory holding any of them would leave old shards
next to new ones (a different shard count does not overwrite them all),
so it is refused unless `force`, which deletes them first. Other files
in the directory are left alone. When the directory holds a finished
run, the refusal says what changed since that run (the model, an input
file, a setting, the version: `keras_elmo.integrations.beam.run_manifest`), or
that nothing did.
"""

import glob
import json
import logging
import os

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from keras_elmo.embedding.embedding_records import MANIFEST
from keras_elmo.embedding.embedding_records import SHARD_PREFIX

logger = logging.getLogger(__name__)

# What earlier runs may have left (glob patterns relative to the output).
TEMP_DIRS = "beam-temp-" + SHARD_PREFIX + "-*"  # WriteToTFRecord's
OWN_PATTERNS = (
    SHARD_PREFIX + "-*",
    TEMP_DIRS + "/*",
    MANIFEST,
    MANIFEST + ".tmp",
)


def existing_outputs(output_dir):
    """Paths in `output_dir` that a run writes (sorted): files, and on a
    local disk Beam's temporary folders, even empty (an object store has
    no folders, only the files under them)."""
    found = set()
    for pattern in OWN_PATTERNS:
        spec = FileSystems.join(output_dir, pattern)
        try:
            results = FileSystems.match([spec])
        except BeamIOError:
            # A file system with folders (HDFS) refuses to list a missing
            # one, where a local disk or an object store matches nothing.
            if FileSystems.exists(output_dir):
                raise
            return []
        for result in results:
            found.update(m.path for m in result.metadata_list)
    if "://" not in output_dir:
        found.update(glob.glob(os.path.join(output_dir, TEMP_DIRS)))
    return sorted(found)


def _recorded_run(output_dir):
    """The `run` of a finished output's manifest; None when there is no
    readable manifest, `{}` when it records none (an earlier version)."""
    path = FileSystems.join(output_dir, MANIFEST)
    try:
        with FileSystems.open(path) as f:
            manifest = json.loads(f.read())
    except (OSError, ValueError):  # Beam's IOError is an OSError
        return None
    return manifest.get("run") or {} if isinstance(manifest, dict) else None


def _since(output_dir, current):
    """What the refusal says about a finished run in `output_dir`."""
    from keras_elmo.embedding.run_identity import finished_run_note

    if current is None:
        return ""
    return finished_run_note(_recorded_run(output_dir), current)


def prepare_output_dir(output_dir, force=False, current=None):
    """Checks `output_dir` before a run; with `force`, deletes an earlier
    run's shards, manifest and temporary files.

    Args:
        output_dir: str. The output directory (any Beam file system).
        force: bool. Delete an earlier run's files.
        current: callable or None. Returns this run's record
            (`keras_elmo.integrations.beam.run_manifest.current_record`); called
            only to compare with a finished run found in `output_dir`, for the
            refusal's message.

    Raises:
        FileExistsError: an earlier run's files are there and not `force`;
            for a finished run, the message names what changed since.
    """
    old = existing_outputs(output_dir)
    if old and not force:
        raise FileExistsError(
            f"Output {output_dir!r} already holds {len(old)} file(s) of an "
            f"earlier run (e.g. {old[0]!r}); new shards would mix with "
            "them. Pass `force=True` to delete them first, or choose another "
            f"output.{_since(output_dir, current)}"
        )
    if old:
        logger.warning("Deleting %d files of an earlier run.", len(old))
        for path in old:  # a local temporary folder goes with its files
            if FileSystems.exists(path):
                FileSystems.delete([path])
        temp_dirs = {
            FileSystems.split(path)[0]
            for path in old
            if FileSystems.split(FileSystems.split(path)[0])[1].startswith(
                TEMP_DIRS[:-1]
            )
        }
        for folder in sorted(temp_dirs):  # as Beam's sink deletes its own
            if FileSystems.exists(folder):
                FileSystems.delete([folder])
    if not FileSystems.exists(output_dir):
        FileSystems.mkdirs(output_dir)
