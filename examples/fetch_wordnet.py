"""Fetches the WordNet 3.0 database from the Debian archive, verified.

    python examples/fetch_wordnet.py [OUT_DIR]   # default examples/data/wordnet

Downloads Debian's `wordnet-base` package (bookworm, version 1:3.0-37)
from the Debian mirror (`deb.debian.org`, the one `apt` uses here) with
`keras.utils.get_file`, checks its pinned SHA-256 (the one the signed
bookworm `Packages` index lists: `apt-cache show wordnet-base`) and
unpacks, in pure Python (no `dpkg` needed), the database files
`usr/share/wordnet/{data,index}.{noun,verb,adj,adv}` and
`{noun,verb,adj,adv}.exc` into `OUT_DIR/dict/`, and the package's
`copyright` file into `OUT_DIR/LICENSE`.

Licence: WordNet 3.0 (Princeton University), a permissive BSD-like
licence: use, copying, modification and distribution are allowed for
any purpose without fee, provided the copyright notice ("WordNet 3.0
Copyright 2006 by Princeton University. All rights reserved.") and the
disclaimer appear on all copies (full text in `OUT_DIR/LICENSE`). The
database is still never committed here: `examples/data/` is
git-ignored, and this script fetches it on demand.
"""

import io
import os
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "data", "wordnet")

DEB_NAME = "wordnet-base_3.0-37_all.deb"
DEB_URL = "http://deb.debian.org/debian/pool/main/w/wordnet/" + DEB_NAME
DEB_SHA256 = "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752"

POS_NAMES = ("noun", "verb", "adj", "adv")
DICT_FILES = tuple(
    f"{kind}.{pos}" for kind in ("data", "index") for pos in POS_NAMES
) + tuple(f"{pos}.exc" for pos in POS_NAMES)
_DICT_PREFIX = "usr/share/wordnet/"
_COPYRIGHT = "usr/share/doc/wordnet-base/copyright"


def read_ar(data):
    """Members of a Unix `ar` archive (a `.deb`): `{name: bytes}`.

    Format: the magic `!<arch>\\n`, then per member a 60-byte header
    (name 16, mtime 12, uid 6, gid 6, mode 8, size 10, `` `\\n ``) and
    `size` bytes of data, padded to an even offset.
    """
    if not data.startswith(b"!<arch>\n"):
        raise ValueError(
            "Expected a Debian package (an `ar` archive starting with "
            f"b'!<arch>\\n'), received bytes starting with {data[:8]!r}."
        )
    members, offset = {}, 8
    while offset + 60 <= len(data):
        header = data[offset : offset + 60]
        if header[58:60] != b"`\n":
            raise ValueError(f"Corrupt `ar` member header at byte {offset}.")
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        start = offset + 60
        members[name] = data[start : start + size]
        offset = start + size + (size % 2)
    return members


def extract_wordnet(deb_path, out_dir):
    """Unpacks the database files of a `wordnet-base` `.deb` (see module
    docstring) into `out_dir`; returns `out_dir/dict`."""
    from keras_elmo.utils.atomic import atomic_write

    with open(deb_path, "rb") as f:
        members = read_ar(f.read())
    names = [n for n in members if n.startswith("data.tar")]
    if not names:
        raise ValueError(
            f"{deb_path}: no data.tar.* member in the package (members: "
            f"{sorted(members)})."
        )
    dict_dir = os.path.join(out_dir, "dict")
    os.makedirs(dict_dir, exist_ok=True)
    wanted = {_DICT_PREFIX + name: name for name in DICT_FILES}
    found = set()
    # tarfile reads .tar, .tar.gz and .tar.xz (bookworm uses xz).
    with tarfile.open(fileobj=io.BytesIO(members[names[0]])) as tar:
        for info in tar.getmembers():
            path = info.name.lstrip("./")
            if not info.isfile():
                continue
            if path in wanted:
                target = os.path.join(dict_dir, wanted[path])
            elif path == _COPYRIGHT:
                target = os.path.join(out_dir, "LICENSE")
            else:
                continue
            with atomic_write(target, "wb") as f:
                f.write(tar.extractfile(info).read())
            found.add(path)
    missing = sorted(set(wanted) - found)
    if missing:
        raise ValueError(f"{deb_path}: the package lacks {missing}.")
    return dict_dir


def fetch(out_dir=DEFAULT_OUT, url=DEB_URL, sha256=DEB_SHA256):
    """Downloads (once) and unpacks WordNet 3.0; returns the `dict` dir.

    Args:
        out_dir: str, the cache folder (git-ignored by default).
        url: str, where the `.deb` is (http(s):// or file://).
        sha256: str, the `.deb`'s expected SHA-256 (checked on every call).

    Returns:
        `(dict_dir, sha256)`: the folder with the database files and the
        verified checksum of the package.

    Raises:
        RuntimeError: the package cannot be downloaded (registry
            unreachable) or its checksum does not match.
    """
    import keras

    dict_dir = os.path.join(out_dir, "dict")
    os.makedirs(out_dir, exist_ok=True)
    try:
        deb_path = keras.utils.get_file(
            fname=os.path.basename(url),
            origin=url,
            file_hash=sha256,
            hash_algorithm="sha256",
            cache_dir=os.path.abspath(out_dir),
            cache_subdir="deb",
        )
    except ValueError as error:  # checksum mismatch after download
        raise RuntimeError(
            f"The package downloaded from {url} does not have the expected "
            f"SHA-256 {sha256} ({error}). Delete {out_dir}/deb and retry, "
            "or pass --url to a trusted copy."
        ) from error
    except Exception as error:  # urllib errors, re-raised by keras
        raise RuntimeError(
            f"Cannot download WordNet 3.0 from {url}: {error}. The Debian "
            "archive is unreachable from here; download "
            f"{DEB_NAME} (SHA-256 {sha256}) elsewhere, e.g. with "
            "`apt-get download wordnet-base`, and pass --url "
            "file:///path/to/it."
        ) from error
    if not all(os.path.exists(os.path.join(dict_dir, n)) for n in DICT_FILES):
        extract_wordnet(deb_path, out_dir)
    return dict_dir, sha256


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out_dir", nargs="?", default=DEFAULT_OUT)
    parser.add_argument("--url", default=DEB_URL)
    parser.add_argument("--sha256", default=DEB_SHA256)
    args = parser.parse_args(argv)
    try:
        dict_dir, _ = fetch(args.out_dir, args.url, args.sha256)
    except RuntimeError as error:
        sys.exit(f"error: {error}")
    print(dict_dir)


if __name__ == "__main__":
    main()
