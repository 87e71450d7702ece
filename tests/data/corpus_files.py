"""Writing small corpus files (plain or gzip) for the data tests."""

import gzip


def write(path, data):
    """Writes `data` bytes to `path` (gzip when it ends in .gz)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(data)
    return str(path)
