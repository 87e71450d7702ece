#!/usr/bin/env python3
"""Full-size random-weight ELMoForManyLangs models and the package's outputs.

    ~/.cache/keras_elmo_side/efml/bin/python \\
        tools/elmoformanylangs_ref/full_size_reference.py \\
        [--out ~/.cache/keras_elmo_side/efml_full] \\
        [--data /work/shared/data/en_pd_lm] \\
        [--debian-text ~/.cache/keras_elmo_side/debian_text]

Runs in the side venv of `setup_efml.sh` (torch 2.13.0+cpu,
elmoformanylangs 0.0.4.post2), with `make_fixtures.py`'s functions. For
each architecture JSON the package ships in `elmoformanylangs/configs/`
(`cnn_50_100_512_4096_sample.json`, `cnn_0_100_512_4096_sample.json`:
identical in 0.0.4.post2, both 4096 LSTM cells, 512 projections, 2
layers, char_dim 50, word_dim 100, 2048 CNN filters, 2 highways) and each
seed in `SEEDS`, it:

1. builds the model with the package's classes (`make_fixtures.
   build_model`) and lexicons drawn from real text: `char.dic` holds the
   fixtures' characters (CJK, U+3000, é, an emoji), then those of the
   Chinese and German lines below, then every other non-space character
   of the first `LEXICON_LINES` lines of `train.txt.gz`, in first-seen
   order, then the specials; `word.dic` the specials, the fixtures'
   words, the Chinese and German lines' words, then those lines'
   `MAX_WORDS` most frequent words. Every parameter is drawn from a
   seeded generator: N(0, 1) embeddings, N(0, (gain / sqrt(fan_in))^2)
   kernels (`full_scale`: gain 1, LSTM state projections 2), N(0, 0.1^2)
   biases;
2. writes the published layout (`make_fixtures.write_folder`, the legacy
   pickle stream of the 2018 files) into `OUT/NAME_seedSEED/`, whose
   `config.json` names the architecture JSON by an absolute path on "the
   authors' machine" and holds no copy of it: the package (and
   keras_elmo) find it by basename among their own configs;
3. runs `Embedder(folder).sents2elmo(SENTENCES, output_layer=-2)` (all
   layers) and `output_layer=-1` (their average), each on an unused
   Embedder (deep copies of one fresh load: the encoder is stateful, so
   only a first batch is reproducible; all 11 sentences are one batch),
   and `output_layer=-2` once more on an unused copy cast to float64
   (`model.double()`): the same computation without float32 rounding;
4. saves `OUT/NAME_seedSEED_reference.npz` (`allow_pickle=False`):
   `sentences_json`, `versions_json` (versions, git commit and whether
   the tree was clean, date, seed, config, lexicon sizes, sources),
   `layers_{i}` float32 [3, n_i, 1024], `average_{i}` float32 [n_i,
   1024], `layers64_{i}` float64 [3, n_i, 1024].

The 13 sentences: the fixtures' 9 (Chinese, English, out-of-lexicon
characters, unknown words, over-long tokens of 48 to 70 code points,
U+3000 / U+00A0 inside tokens, emoji, composed and decomposed `café`,
literal specials, one token), two lines of `test.txt.gz`: line 4 (30
tokens) and the first 150 tokens of the first line with at least 150
(line 77, 169 tokens), and two lines of real text in other languages
(`fetch_debian_text.sh` puts them in `--debian-text`): the body of the
first of the Three Hundred Tang Poems (Zhang Jiuling, "感遇 其一"), one
token a character, punctuation included (48 tokens), and the first German
proverb of `sprichworte` with at least 12 words. The record's
`real_text_labels` names the real lines for the comparison.
benchmarks/elmoformanylangs_full_size.py compares keras_elmo against
these files. About 2 minutes a model on one core.
"""

import argparse
import collections
import copy
import gzip
import hashlib
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import time

import elmoformanylangs
import numpy as np
import torch
from elmoformanylangs import Embedder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402

CONFIGS = ("cnn_50_100_512_4096_sample.json", "cnn_0_100_512_4096_sample.json")
SEEDS = (1234, 99)
LEXICON_LINES = 50000
MAX_WORDS = 20000
MEDIUM_LINE = 3  # 0-based line of test.txt.gz
LONG_TOKENS = 150
GERMAN_MIN_TOKENS = 12
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def package_config(name):
    """An architecture JSON of the installed package's `configs/`."""
    folder = os.path.join(os.path.dirname(elmoformanylangs.__file__), "configs")
    with open(os.path.join(folder, name)) as f:
        return json.load(f)


def open_text(data, name):
    return gzip.open(os.path.join(data, name), "rt", encoding="utf-8")


def real_sentences(data):
    """`(medium, long)`: test line MEDIUM_LINE, and the first LONG_TOKENS
    tokens of the first test line that has as many, with their line
    numbers (1-based)."""
    medium = long = None
    with open_text(data, "test.txt.gz") as f:
        for i, line in enumerate(f):
            tokens = line.split()
            if i == MEDIUM_LINE:
                medium = (i + 1, tokens)
            if long is None and len(tokens) >= LONG_TOKENS:
                long = (i + 1, len(tokens), tokens[:LONG_TOKENS])
            if medium and long:
                return medium, long
    raise ValueError(f"{data}: no line of {LONG_TOKENS} tokens")


def fortune_entries(path):
    """A fortune file's entries (split at `%` lines), each a list of its
    non-empty lines, stripped, ANSI colour codes removed."""
    with open(path, encoding="utf-8") as f:
        text = ANSI_COLOUR.sub("", f.read())
    return [
        [line.strip() for line in entry.splitlines() if line.strip()]
        for entry in re.split(r"(?m)^%$", text)
    ]


def chinese_poem(debian_text):
    """The first Tang poem's body (its title line `《...》` and author
    line `作者：...` dropped), one token a character."""
    entry = fortune_entries(os.path.join(debian_text, "tang300.u8"))[0]
    body = [line for line in entry if not line.startswith(("《", "作者"))]
    return [c for c in "".join(body) if c.strip()]


def german_proverb(debian_text):
    """The first proverb of `sprichworte` with GERMAN_MIN_TOKENS or more
    whitespace tokens (its `-- Sprichwort` attribution dropped)."""
    path = os.path.join(debian_text, "sprichworte")
    for entry in fortune_entries(path):
        text = " ".join(line for line in entry if not line.startswith("--"))
        if len(text.split()) >= GERMAN_MIN_TOKENS:
            return text.split()
    raise ValueError(f"{path}: no proverb of {GERMAN_MIN_TOKENS} tokens")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def lexicons(data, other_languages=()):
    """`(chars, words)` without the specials (see the module docstring);
    `other_languages`: token lists whose characters and words come right
    after the fixtures'."""
    chars = list(make_fixtures.CHARS)
    seen = set(chars)
    for c in "".join(t for tokens in other_languages for t in tokens):
        if c not in seen:
            seen.add(c)
            chars.append(c)
    counts = collections.Counter()
    with open_text(data, "train.txt.gz") as f:
        for _, line in zip(range(LEXICON_LINES), f):
            tokens = line.split()
            counts.update(tokens)
            for c in "".join(tokens):
                # A whitespace character's line would collapse onto U+3000
                # (make_fixtures' docstring); split() leaves none anyway.
                if c not in seen and c.strip():
                    seen.add(c)
                    chars.append(c)
    specials = set(make_fixtures.CHAR_SPECIALS + make_fixtures.WORD_SPECIALS)
    words = list(make_fixtures.WORDS)
    for word in (t for tokens in other_languages for t in tokens):
        if word not in words and word not in specials:
            words.append(word)
    taken = set(words) | specials
    for word, _ in counts.most_common():
        if len(words) >= len(make_fixtures.WORDS) + MAX_WORDS:
            # MAX_WORDS beyond the fixtures' words (the other languages'
            # words count against it).
            break
        if word not in taken:
            taken.add(word)
            words.append(word)
    return chars, words


def full_scale(name, parameter):
    """Standard deviations for a full-size model: embeddings 1, biases
    0.1, kernels gain / sqrt(fan_in) (gain 2 for the LSTM projections from
    4096 cells to 512, else 1), so activations stay O(1)."""
    if "embedding" in name:
        return 1.0
    if parameter.dim() == 1:
        return 0.1
    fan_in = math.prod(parameter.shape[1:])
    gain = 2.0 if "state_projection" in name else 1.0
    return gain / math.sqrt(fan_in)


def clipped_share(layers):
    """The share of biLSTM outputs (layers 1 and 2) with |value| >= 3, the
    projection clip (layer 2 adds layer 1's output, so it can exceed 3)."""
    values = np.concatenate([a[1:].reshape(-1) for a in layers])
    return float((np.abs(values) >= 2.9999).mean())


def git_state():
    """`(commit, uncommitted_changes)` of the checkout holding this file."""
    here = os.path.dirname(os.path.abspath(__file__))

    def git(*args):
        done = subprocess.run(
            ["git", *args], cwd=here, capture_output=True, text=True
        )
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "HEAD"), None if status is None else bool(status)


def reference(folder, sentences):
    """The package's float32 `-2` and `-1` outputs and its float64 `-2`,
    each from an unused copy of one fresh `Embedder(folder)`."""
    fresh = Embedder(folder, batch_size=64)
    copies = [copy.deepcopy(fresh) for _ in range(2)]
    layers = make_fixtures.run_package(folder, -2, sentences, fresh)
    average = make_fixtures.run_package(folder, -1, sentences, copies[0])
    copies[1].model.double()
    layers64 = make_fixtures.run_package(folder, -2, sentences, copies[1])
    return layers, average, layers64


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--out",
        default=os.path.expanduser("~/.cache/keras_elmo_side/efml_full"),
    )
    parser.add_argument("--data", default="/work/shared/data/en_pd_lm")
    parser.add_argument(
        "--debian-text",
        default=os.path.expanduser("~/.cache/keras_elmo_side/debian_text"),
        help="fetch_debian_text.sh's output folder.",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    logging.getLogger("elmoformanylangs").setLevel(logging.ERROR)
    os.makedirs(args.out, exist_ok=True)
    (medium_line, medium), (long_line, long_length, long) = real_sentences(
        args.data
    )
    chinese, german = (
        chinese_poem(args.debian_text),
        german_proverb(args.debian_text),
    )
    sentences = make_fixtures.SENTENCES + [medium, long, chinese, german]
    chars, words = lexicons(args.data, (chinese, german))
    tang = os.path.join(args.debian_text, "tang300.u8")
    proverbs = os.path.join(args.debian_text, "sprichworte")
    commit, dirty = git_state()
    for config in CONFIGS:
        arch = package_config(config)
        for seed in SEEDS:
            name = f"{config[: -len('.json')]}_seed{seed}"
            folder = os.path.join(args.out, name)
            model = make_fixtures.build_model(
                arch, seed, chars, words, scale_of=full_scale
            )
            shutil.rmtree(folder, ignore_errors=True)
            make_fixtures.write_folder(
                folder, arch, True, model, chars, words, arch_name=config
            )
            del model
            layers, average, layers64 = reference(folder, sentences)
            record = {
                "torch": torch.__version__,
                "elmoformanylangs": "0.0.4.post2",
                "package_file": elmoformanylangs.__file__,
                "python": sys.version.split()[0],
                "torch_threads": torch.get_num_threads(),
                "commit": commit,
                "uncommitted_changes": dirty,
                "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                "seed": seed,
                "config": config,
                "layout": "legacy",
                "chars": len(chars) + len(make_fixtures.CHAR_SPECIALS),
                "words": len(words) + len(make_fixtures.WORD_SPECIALS),
                "lexicon_source": f"{args.data}/train.txt.gz, first "
                f"{LEXICON_LINES} lines",
                "sentence_sources": {
                    "0-8": "make_fixtures.SENTENCES",
                    "9": f"{args.data}/test.txt.gz line {medium_line}",
                    "10": f"{args.data}/test.txt.gz line {long_line} "
                    f"({long_length} tokens), first {LONG_TOKENS}",
                    "11": f"{tang} (sha256 {sha256(tang)}): poem 1's body, "
                    "one token a character",
                    "12": f"{proverbs} (sha256 {sha256(proverbs)}): the "
                    f"first proverb of >= {GERMAN_MIN_TOKENS} tokens",
                },
                "real_text_labels": {
                    "9": "en_test_line_4",
                    "10": f"en_test_{LONG_TOKENS}_tokens",
                    "11": "zh_tang300_poem_1",
                    "12": "de_sprichworte",
                },
                "clipped_share": clipped_share(layers),
            }
            arrays = {
                "sentences_json": np.array(json.dumps(sentences)),
                "versions_json": np.array(json.dumps(record)),
            }
            for i, (a, m, a64) in enumerate(zip(layers, average, layers64)):
                arrays[f"layers_{i}"] = np.asarray(a, np.float32)
                arrays[f"average_{i}"] = np.asarray(m, np.float32)
                arrays[f"layers64_{i}"] = np.asarray(a64, np.float64)
            np.savez_compressed(
                os.path.join(args.out, f"{name}_reference.npz"), **arrays
            )
            gap = max(
                float(np.abs(a - a64).max() / np.abs(a64).max())
                for a, a64 in zip(layers, layers64)
            )
            print(
                f"{name}: {len(layers)} sentences, layers {layers[-1].shape}, "
                f"clipped {record['clipped_share']:.1%}, float32 vs float64 "
                f"{gap:.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
