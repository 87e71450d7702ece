#!/usr/bin/env python3
"""Writes tests/fixtures/simple_elmo/: simple_elmo 0.9.2's own outputs.

    bash tools/simple_elmo_ref/setup_simple_elmo.sh
    python tools/simple_elmo_ref/make_fixtures.py \
        [--out-dir tests/fixtures/simple_elmo]

Runs with any Python that has numpy + h5py (it imports neither keras_elmo
nor simple_elmo); simple_elmo runs in its side venv through
`run_simple_elmo.py`. Steps:

1. the seeded `tiny` weights of tests/fixtures/make_weights.py (seed 0,
   the digest pinned in tests/fixtures/weights_sha256.json);
2. a vocabulary (`VOCABULARY`, bilm-tf order: `<S>`, `</S>`, `<UNK>`
   first) and a softmax `softmax/W` `[V, 16]` ~ N(0, 1), `softmax/b` ~
   N(0, 0.5^2) from `numpy.random.default_rng(33)`: written to
   vocab.txt and softmax.hdf5 (committed);
3. simple_elmo's vectors (`run_simple_elmo.py vectors`) on
   `VECTOR_SENTENCES`, max_batch_size 4 -> vectors.npz, and its default
   max_batch_size 32 (one batch) -> vectors_b32.npz;
4. a TF1 checkpoint of simple_elmo's own training graph holding the same
   weights and softmax (`make-checkpoint`), then its
   `get_elmo_substitutes` (max_batch_size 4, topn 3) on
   `SUBSTITUTE_SENTENCES` -> substitutes.json. The checkpoint folder
   (checkpoint/: options.json, vocab.txt, model.ckpt.{index,data-*})
   is committed too: keras_elmo reads it as a bilm-tf checkpoint.

Reruns give identical files (checked).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SIDE_PYTHON = os.path.expanduser(
    "~/.cache/keras_elmo_side/simple_elmo/bin/python"
)

# 10 sentences, batches of 4, 4 and 2: states carry across three batches
# and into a smaller last one.
VECTOR_SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Hello"],
    ["Zürich", "café", "naïve", "—", "½", "😀😀"],
    ["a", "b"],
    [
        "Deep",
        "contextualized",
        "word",
        "representations",
        "model",
        "both",
        "complex",
        "characteristics",
        "of",
        "word",
        "use",
        ".",
    ],
    ["x" * 60, "long", "tokens", "are", "cut"],
    ["He", "said", "nothing", "."],
    ["Как", "дела", "?"],
    ["One", "two", "three", "four", "five", "six", "seven", "eight", "nine"],
    ["end", "."],
]
# get_elmo_substitutes stops at the first row whose stream runs dry, so
# only sentences that end on the same step as the shortest come back:
# four sentences of six tokens, in one batch of four rows.
SUBSTITUTE_SENTENCES = [
    ["the", "cat", "sat", "on", "the", "mat"],
    ["a", "dog", "ran", "to", "the", "park"],
    ["we", "saw", "a", "zebra", "in", "town"],
    ["the", "model", "reads", "the", "whole", "sentence"],
]
VOCABULARY = ["<S>", "</S>", "<UNK>"] + (
    "the a cat dog sat ran on to in mat park we saw town model reads "
    "whole sentence . , he said nothing end one two three word use of "
    "and is it was"
).split()


def _run(cmd):
    subprocess.run(cmd, check=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out-dir", default=os.path.join(REPO, "tests/fixtures/simple_elmo")
    )
    parser.add_argument("--side-python", default=SIDE_PYTHON)
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    script = os.path.join(HERE, "run_simple_elmo.py")
    with tempfile.TemporaryDirectory() as tmp:
        _run(
            [
                sys.executable,
                os.path.join(REPO, "tests/fixtures/make_weights.py"),
                "tiny",
                "--out-dir",
                tmp,
            ]
        )
        vocab = os.path.join(args.out_dir, "vocab.txt")
        with open(vocab, "w", encoding="utf-8") as f:
            f.write("\n".join(VOCABULARY) + "\n")
        rng = np.random.default_rng(33)
        softmax = os.path.join(args.out_dir, "softmax.hdf5")
        with h5py.File(softmax, "w") as f:
            f.create_dataset(
                "softmax/W",
                data=rng.normal(0.0, 1.0, (len(VOCABULARY), 16)).astype(
                    np.float32
                ),
            )
            f.create_dataset(
                "softmax/b",
                data=rng.normal(0.0, 0.5, len(VOCABULARY)).astype(np.float32),
            )
        sentences = {
            "vector_sentences": VECTOR_SENTENCES,
            "substitute_sentences": SUBSTITUTE_SENTENCES,
        }
        with open(
            os.path.join(args.out_dir, "sentences.json"), "w", encoding="utf-8"
        ) as f:
            json.dump(sentences, f, indent=1, ensure_ascii=False)
            f.write("\n")
        for key, values in sentences.items():
            with open(os.path.join(tmp, f"{key}.json"), "w") as f:
                json.dump(values, f)

        model = os.path.join(tmp, "model")
        os.makedirs(model)
        shutil.copy(
            os.path.join(tmp, "tiny_options.json"),
            os.path.join(model, "options.json"),
        )
        shutil.copy(
            os.path.join(tmp, "tiny_weights.hdf5"),
            os.path.join(model, "model.hdf5"),
        )
        shutil.copy(vocab, os.path.join(model, "vocab.txt"))
        for batch_size, name in ((4, "vectors.npz"), (32, "vectors_b32.npz")):
            _run(
                [
                    args.side_python,
                    script,
                    "vectors",
                    "--model-dir",
                    model,
                    "--sentences",
                    os.path.join(tmp, "vector_sentences.json"),
                    "--batch-size",
                    str(batch_size),
                    "--out",
                    os.path.join(args.out_dir, name),
                ]
            )
        checkpoint = os.path.join(args.out_dir, "checkpoint")
        shutil.rmtree(checkpoint, ignore_errors=True)
        _run(
            [
                args.side_python,
                script,
                "make-checkpoint",
                "--options",
                os.path.join(tmp, "tiny_options.json"),
                "--weights",
                os.path.join(tmp, "tiny_weights.hdf5"),
                "--softmax",
                softmax,
                "--vocab",
                vocab,
                "--out-dir",
                checkpoint,
            ]
        )
        _run(
            [
                args.side_python,
                script,
                "substitutes",
                "--model-dir",
                checkpoint,
                "--sentences",
                os.path.join(tmp, "substitute_sentences.json"),
                "--batch-size",
                "4",
                "--topn",
                "3",
                "--out",
                os.path.join(args.out_dir, "substitutes.json"),
            ]
        )


if __name__ == "__main__":
    main()
