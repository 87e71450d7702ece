"""The sha256 check of a downloaded model archive: pinned, or recorded on
first download and checked on every later use (trust on first use).

Most published `.zip` / `.tar.gz` models have no digest their publisher
states, and none could be recorded when they were registered (no network
then): their registry entry says `sha256=None`, and `keras-elmo presets`
prints "unpinned". For those an unverified download is unavoidable the
first time, so the loader says so and narrows the risk to that one
download:

- **pinned** (`sha256` given): the archive's digest must equal it, on the
  first download (Keras' `get_file` checks it too) and on every later use
  of the cached copy;
- **unpinned**: the first download's digest is written beside the cached
  archive, `CACHE/<name>.zip.sha256` (a JSON object `{"sha256": ...,
  "source": ...}`, written atomically), with a WARNING log that names the
  digest so a user can compare it with another copy. Every later use,
  including a `force=True` re-download, must give the same digest: the
  NLPL repository states that a published entry never changes
  (wiki.nlpl.eu/index.php/Vectors/home), so a different archive under the
  same name is an error, never silently accepted. Deleting the `.sha256`
  file accepts the new archive. An archive given by URL (not by name) is
  the exception the URL cache documents (docs/PRESETS.md, "Caches of
  URLs"): `force=True` fetches it again and records the new digest, with
  a WARNING naming the old and the new one.

An archive given by local path is the user's own file: it is unpacked (its
digest keys the unpack folder) but neither pinned nor recorded.
"""

import json
import logging

from keras_elmo.presets import cache_integrity
from keras_elmo.presets.download import PresetDownloadError
from keras_elmo.utils.atomic import atomic_write

logger = logging.getLogger(__name__)

# The record's name and reader live with the cache's other records.
RECORD_SUFFIX = cache_integrity.RECORD_SUFFIX
record_path = cache_integrity.archive_record_path
read_record = cache_integrity.read_archive_record


class ArchiveDigestError(PresetDownloadError):
    """A cached archive's sha256 differs from the pinned or recorded one."""


def check_download(
    archive_path, digest, pinned, label, source=None, accept_change=False
):
    """Checks the digest of a downloaded archive (see the module docstring).

    Args:
        archive_path: str. The cached archive.
        digest: str. Its sha256 (hex), computed by the caller.
        pinned: str or None. The registry's digest.
        label: str. How messages name the model.
        source: str or None. The URL it came from, for the record.
        accept_change: bool. Record a digest that differs from the
            recorded one (a `force=True` re-download of a URL) instead of
            refusing it.

    Returns:
        str: "pinned", "recorded" (first download of an unpinned archive,
        or an accepted change) or "matches-record".

    Raises:
        ArchiveDigestError: the digest differs from the pinned or recorded
            one; the message names both and what to delete.
    """
    if pinned:
        if digest != pinned.lower():
            raise ArchiveDigestError(
                f"{label}: the archive {archive_path!r} has sha256 {digest}, "
                f"expected the pinned {pinned.lower()}. Delete it (or pass "
                "`force=True`) to fetch it again."
            )
        return "pinned"
    record = record_path(archive_path)
    recorded = read_record(archive_path)
    if recorded is None or (accept_change and digest != recorded):
        with atomic_write(record) as f:
            json.dump({"sha256": digest, "source": source}, f, indent=2)
        before = "" if recorded is None else f" (it was {recorded})"
        logger.warning(
            "%s has no pinned sha256 (unpinned): this download could not be "
            "verified. Its sha256 %s%s is recorded in %s and every later "
            "use is checked against it.",
            label,
            digest,
            before,
            record,
        )
        return "recorded"
    if digest != recorded:
        raise ArchiveDigestError(
            f"{label}: the archive {archive_path!r} has sha256 {digest}, but "
            f"{recorded} was recorded when it was first downloaded (in "
            f"{record!r}); a published archive should never change. Delete "
            f"{record!r} to accept the new archive, or delete the archive "
            "to fetch it again."
        )
    return "matches-record"
