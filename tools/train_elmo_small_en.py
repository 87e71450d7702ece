"""Retrains the shipped `elmo_small_en` from scratch: the committed recipe.

    python tools/train_elmo_small_en.py ../shared/data/en_pd_lm \\
        [--out runs/elmo_small_en] [--install]

DATA_DIR holds en_pd_lm's `train.txt.gz`, `valid.txt.gz`, `test.txt.gz`
(../shared/data/README.md says how to rebuild it). The steps are the
`keras-elmo` commands the model card lists, with `--deterministic` and
`--seed 0`, run one after another (each resumes when rerun: the whole
script can be restarted after any interruption):

1. `vocab --min-count 3`: 37,023 words with `<S>`, `</S>`, `<UNK>`.
2. Stage 1, 4,400 steps from random weights: Adam 2e-3, dropout 0.1,
   4,096 sampled negatives, batches of 64 pieces of <= 50 tokens,
   length buckets 10,20,30,40, a 10,000-sentence shuffle buffer.
3. Stage 2, 4 epochs of 2,000 steps from stage 1's weights and softmax,
   the whole corpus shuffled (400,000-sentence buffer), the rate halved
   per epoch from the second (2e-3, 1e-3, 5e-4, 2.5e-4), validation
   perplexity after every epoch.
4. The float16 copy that ships (`OUT/preset/`: options.json,
   weights.hdf5, softmax.hdf5, vocab.txt).
5. `evaluate` of that copy on test, beside the add-one unigram model:
   `OUT/test_perplexity.json`, the file the model card's table quotes.

`--install` then copies `OUT/preset/*` into keras_elmo/presets/elmo_small_en
and the results file to benchmarks/results/elmo_small_en_perplexity.json.
The shipped weights came from the same flags in two non-deterministic
runs interrupted and resumed between sessions, so a rerun gives close,
not bit-identical, weights. About 4.7 hours on 2 CPU cores.
"""

import argparse
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

from keras_elmo.utils.atomic import atomic_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PRESET = os.path.join(REPO, "keras_elmo", "presets", "elmo_small_en")
STAGE_FLAGS = [
    "--batch-size", "64", "--max-tokens", "50", "--optimizer", "adam",
    "--learning-rate", "0.002", "--dropout", "0.1", "--num-sampled", "4096",
    "--bucket-boundaries", "10,20,30,40", "--lr-schedule", "epoch",
    "--seed", "0", "--deterministic", "--quiet",
]  # fmt: skip


def keras_elmo(*args):
    command = [sys.executable, "-m", "keras_elmo.cli.main", *args]
    sys.stderr.write("$ keras-elmo " + " ".join(args) + "\n")
    subprocess.run(command, check=True)


def half_precision_copy(model_dir, out):
    """Writes `model_dir`'s model to `out` with float16 weight files."""
    os.makedirs(out, exist_ok=True)
    for name in ("options.json", "vocab.txt"):
        shutil.copyfile(os.path.join(model_dir, name), os.path.join(out, name))
    for name in ("weights.hdf5", "softmax.hdf5"):
        source = os.path.join(model_dir, name)
        with atomic_path(os.path.join(out, name)) as tmp:
            with h5py.File(source, "r") as src, h5py.File(tmp, "w") as dst:

                def copy(key, item, dst=dst):
                    if isinstance(item, h5py.Dataset):
                        value = np.asarray(item[()])
                        if value.dtype.kind == "f":
                            value = value.astype("float16")
                        dst.create_dataset(key, data=value)

                src.visititems(copy)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("data_dir")
    parser.add_argument(
        "--out", default=os.path.join(REPO, "runs", "elmo_small_en")
    )
    parser.add_argument("--install", action="store_true")
    args = parser.parse_args(argv)
    split = {
        s: os.path.join(args.data_dir, f"{s}.txt.gz")
        for s in ("train", "valid", "test")
    }
    for path in split.values():
        if not os.path.exists(path):
            raise SystemExit(
                f"`data_dir`: expected {path} (en_pd_lm), not found."
            )
    os.makedirs(args.out, exist_ok=True)
    vocab = os.path.join(args.out, "vocab.txt")
    if not os.path.exists(vocab):
        keras_elmo("vocab", split["train"], "-o", vocab, "--min-count", "3")
    options = os.path.join(PRESET, "options.json")
    stage1, stage2 = (os.path.join(args.out, s) for s in ("stage1", "stage2"))
    common = ["--train", split["train"], "--vocab", vocab, "--config", options]
    if not os.path.exists(os.path.join(stage1, "softmax.hdf5")):
        keras_elmo(
            "train", *common, "--out", stage1, *STAGE_FLAGS,
            "--epochs", "1", "--steps-per-epoch", "4400",
            "--shuffle-buffer", "10000",
        )  # fmt: skip
    if not os.path.exists(os.path.join(stage2, "softmax.hdf5")):
        keras_elmo(
            "train", *common, "--out", stage2, *STAGE_FLAGS,
            "--valid", split["valid"],
            "--init-from", *(os.path.join(stage1, f) for f in (
                "options.json", "weights.hdf5", "softmax.hdf5")),
            "--shuffle-buffer", "400000", "--epochs", "4",
            "--steps-per-epoch", "2000", "--lr-decay", "0.5",
            "--lr-decay-start", "2",
        )  # fmt: skip
    preset = half_precision_copy(stage2, os.path.join(args.out, "preset"))
    results = os.path.join(args.out, "test_perplexity.json")
    keras_elmo(
        "evaluate", "--data", split["test"], "--model", preset,
        "--unigram-baseline", split["train"], "--results", results,
    )  # fmt: skip
    if args.install:
        for name in os.listdir(preset):
            shutil.copyfile(
                os.path.join(preset, name), os.path.join(PRESET, name)
            )
        shutil.copyfile(
            results,
            os.path.join(
                REPO, "benchmarks", "results", "elmo_small_en_perplexity.json"
            ),
        )


if __name__ == "__main__":
    main()
