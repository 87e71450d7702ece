"""Do `keras-elmo train`'s defaults work? The study behind them.

    python benchmarks/train_defaults.py [--corpora ewt,pd100k] [--recipes R]

For each corpus, runs what the README tells a new user to run, with no
tuning flags: `keras-elmo vocab TRAIN -o vocab.txt`, then `keras-elmo
train --train TRAIN --valid VALID --vocab vocab.txt --out OUT --epochs 3`
(plus `--recipe NAME` for the non-default recipes), then scores the test
split once on the epoch the validation rules chose, next to an add-one
unigram model estimated on TRAIN (`keras-elmo evaluate --unigram-baseline`).
The target (issue 14): test perplexity <= 0.75 x the unigram's.

Corpora (real text; none committed; en_pd_lm and UD-EWT are in
../shared/data, PTB is fetched by `fetch_ptb.py`):

- `ewt`: UD English-EWT train / dev / test sentences (204k / 25k / 25k
  tokens; web text: reviews, e-mail, forums).
- `pd100k`, `pd1m`: seeded random samples of en_pd_lm train sentences
  (about 1e5 and 1e6 tokens); valid / test: 600-sentence samples of
  en_pd_lm valid / test.
- `ptb`: Penn Treebank (929k / 74k / 82k tokens, lower-cased, 10k words).

Every run is resumable (rerun the same command); finished runs are kept
in `benchmarks/results/train_defaults.json`, one entry per corpus and
recipe, with provenance.
"""

import argparse
import gzip
import json
import logging
import os
import random
import subprocess
import sys
import time

from fetch_ptb import fetch as fetch_ptb
from provenance import provenance
from provenance import write_json

from keras_elmo.utils.atomic import atomic_write

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "data")
RESULTS = os.path.join(HERE, "results", "train_defaults.json")
CORPORA = ("ewt", "pd100k", "pd1m", "ptb")


def conllu_sentences(path):
    """The token lines of a CoNLL-U file, one space-joined sentence each."""
    sentences, tokens = [], []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if tokens:
                    sentences.append(" ".join(tokens))
                tokens = []
            elif not line.startswith("#"):
                columns = line.split("\t")
                if columns[0].isdigit():
                    tokens.append(columns[1])
    if tokens:
        sentences.append(" ".join(tokens))
    return sentences


def sample_sentences(path, tokens=None, sentences=None, seed=0):
    """A seeded random sample of `path`'s lines (in file order): up to
    `tokens` tokens, or `sentences` lines."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    order = list(range(len(lines)))
    random.Random(seed).shuffle(order)
    chosen, count = [], 0
    for i in order:
        if sentences is not None and len(chosen) >= sentences:
            break
        if tokens is not None and count >= tokens:
            break
        chosen.append(i)
        count += len(lines[i].split())
    return [lines[i] for i in sorted(chosen)]


def write_lines(path, lines):
    if not os.path.exists(path):
        with atomic_write(path) as f:
            f.write("".join(line + "\n" for line in lines))
    return path


def corpus_files(name, work):
    """`{"train", "valid", "test"}` paths of corpus `name`, built once."""
    os.makedirs(work, exist_ok=True)
    if name == "ptb":
        ptb = fetch_ptb()
        return {
            s: os.path.join(ptb, f"ptb.{s}.txt")
            for s in ("train", "valid", "test")
        }
    paths = {
        s: os.path.join(work, f"{name}.{s}.txt")
        for s in ("train", "valid", "test")
    }
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    if name == "ewt":
        ewt = os.path.join(SHARED, "ud_en_ewt", "en_ewt-ud-1.2-{}.conllu.gz")
        for split, source in (
            ("train", "train"),
            ("valid", "dev"),
            ("test", "test"),
        ):
            write_lines(paths[split], conllu_sentences(ewt.format(source)))
    else:
        size = {"pd100k": 100_000, "pd1m": 1_000_000}[name]
        pd = os.path.join(SHARED, "en_pd_lm", "{}.txt.gz")
        write_lines(
            paths["train"], sample_sentences(pd.format("train"), tokens=size)
        )
        for split in ("valid", "test"):
            write_lines(
                paths[split], sample_sentences(pd.format(split), sentences=600)
            )
    return paths


def keras_elmo(*args):
    """Runs `keras-elmo ARGS` as a user would; returns its stdout."""
    command = [sys.executable, "-m", "keras_elmo.cli.main", *args]
    logging.info("$ keras-elmo %s", " ".join(args))
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise RuntimeError(f"keras-elmo {args[0]} failed ({done.returncode})")
    return done.stdout


def count_tokens(path):
    with open(path, encoding="utf-8") as f:
        return sum(len(line.split()) for line in f)


def run_one(name, recipe, work, epochs):
    files = corpus_files(name, os.path.join(work, "corpora"))
    out = os.path.join(work, f"{name}-{recipe}")
    vocab = os.path.join(work, f"{name}.vocab.txt")
    if not os.path.exists(vocab):
        keras_elmo("vocab", files["train"], "-o", vocab)
    train = ["train", "--train", files["train"], "--valid", files["valid"]]
    train += [
        "--vocab",
        vocab,
        "--out",
        out,
        "--epochs",
        str(epochs),
        "--quiet",
        # Not a tuning flag: resuming from any step gives the same model,
        # and the 1M-token runs outlast a session here.
        "--checkpoint-every",
        "100",
    ]
    if recipe != "default":
        train += ["--recipe", recipe]
    start = time.perf_counter()
    keras_elmo(*train)
    seconds = time.perf_counter() - start
    scores = json.loads(
        keras_elmo(
            "evaluate",
            "--data",
            files["test"],
            "--model",
            out,
            "--unigram-baseline",
            files["train"],
            "--json",
        )
    )
    with open(os.path.join(out, "history.json")) as f:
        history = json.load(f)
    with open(vocab, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    return {
        "corpus": name,
        "recipe": recipe,
        "train_tokens": count_tokens(files["train"]),
        "test_tokens": count_tokens(files["test"]),
        "vocabulary": vocab_size,
        "command": "keras-elmo " + " ".join(train),
        "epochs": epochs,
        "seconds_this_invocation": seconds,
        "test": scores,
        "ratio_to_unigram": scores["ratio_to_unigram"],
        "meets_target_0_75": scores["ratio_to_unigram"] <= 0.75,
        "history": history,
    }


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--recipes", default="default")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument(
        "--work", default=os.path.join(HERE, "data", "train_defaults")
    )
    parser.add_argument("--results", default=RESULTS)
    args = parser.parse_args(argv)
    results = {"runs": []}
    if os.path.exists(args.results):
        with open(args.results) as f:
            results = json.load(f)
    for name in args.corpora.split(","):
        if name not in CORPORA:
            raise ValueError(
                f"Received an invalid value for `--corpora`, expected names "
                f"from {CORPORA}, got {name!r}."
            )
        for recipe in args.recipes.split(","):
            done = [
                r
                for r in results["runs"]
                if (r["corpus"], r["recipe"], r["epochs"])
                == (name, recipe, args.epochs)
            ]
            if done:
                logging.info(
                    "%s / %s: done (%.3f)",
                    name,
                    recipe,
                    done[0]["ratio_to_unigram"],
                )
                continue
            run = run_one(name, recipe, args.work, args.epochs)
            run["provenance"] = provenance(written=[args.results])
            results["runs"].append(run)
            write_json(args.results, results)
            logging.info(
                "%s / %s: test perplexity %.1f, unigram %.1f, ratio %.3f",
                name,
                recipe,
                run["test"]["perplexity"],
                run["test"]["unigram_perplexity"],
                run["ratio_to_unigram"],
            )
    return results


if __name__ == "__main__":
    main()
