"""`keras-elmo train` under each Keras backend, side by side, on real text.

    python benchmarks/training_backends.py [--backends tensorflow,jax,torch]
        [--config small] [--lines 2000] [--steps 40] [--epochs 2]
        [--rounds 2] [--threads 2]
        [--out benchmarks/results/training_backends.json]

What a user gets who runs the README's training command with no tuning
flags under `KERAS_BACKEND=tensorflow` (`keras_elmo.training.Trainer`),
`jax` or `torch` (`keras_elmo.training.NeutralTrainer`: the same default
recipe, Adam 2e-3, dropout 0.1, full softmax, batch 64): each run is a
fresh `keras-elmo train --train TRAIN --vocab VOCAB --out OUT --architecture
CONFIG --epochs E --steps-per-epoch S --seed 0` in its own process,
pinned to `--threads` cores, on the first `--lines` lines of en_pd_lm
train (real text, natural lengths; the vocabulary from `keras-elmo vocab`
on the same lines). Rounds run every backend once, in turns (order
reversed every other round).

Figures come from each run's own `OUT/history.json`: per epoch, the
forward tokens over the epoch's seconds (`tokens_per_second`) and the
mean training loss. Epoch 1 includes tracing / compiling (JAX compiles
once per padded batch shape); the later epochs are the steady rate. The
summary gives, per backend, the median over rounds of the last epoch's
tokens/s, its ratio to TensorFlow's median with the per-round range,
and the last epoch's loss (the same data and seed: a backend that
learns differently shows here). A backend that cannot start is
recorded as skipped with the reason.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from provenance import provenance
from provenance import write_json
from real_text import read_sentences

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN_TEXT = os.path.join(
    HERE, "..", "..", "shared", "data", "en_pd_lm", "train.txt.gz"
)
BACKENDS = ("tensorflow", "jax", "torch")


def _keras_elmo(*args, env=None, threads=2):
    """Runs `keras-elmo ARGS` in a fresh process pinned to `threads` cores."""
    cores = sorted(os.sched_getaffinity(0))[:threads]
    command = [
        sys.executable,
        "-c",
        "import sys; from keras_elmo.cli.main import main; sys.exit(main())",
        *args,
    ]
    start = time.perf_counter()
    done = subprocess.run(
        command,
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, cores),
    )
    return done, time.perf_counter() - start


def _backend_env(backend, threads):
    env = dict(os.environ)
    env.update(
        KERAS_BACKEND=backend,
        TF_CPP_MIN_LOG_LEVEL="2",
        OMP_NUM_THREADS=str(threads),
        XLA_FLAGS=f"--xla_cpu_multi_thread_eigen=true "
        f"intra_op_parallelism_threads={threads}",
        PYTHONPATH=os.path.dirname(HERE),
    )
    return env


def train_once(backend, args, train, vocab, out):
    """One fresh run; its history's epochs, or the reason it failed."""
    done, wall = _keras_elmo(
        "train",
        "--train",
        train,
        "--vocab",
        vocab,
        "--out",
        out,
        "--architecture",
        args.config,
        "--epochs",
        str(args.epochs),
        "--steps-per-epoch",
        str(args.steps),
        "--seed",
        "0",
        "--quiet",
        "--force",
        env=_backend_env(backend, args.threads),
        threads=args.threads,
    )
    history = os.path.join(out, "history.json")
    if done.returncode != 0 or not os.path.exists(history):
        return {"error": done.stderr.strip().splitlines()[-3:]}
    with open(history, encoding="utf-8") as f:
        epochs = json.load(f)
    return {
        "wall_s": round(wall, 1),
        "epochs": [
            {
                "tokens_per_second": round(e["tokens_per_second"], 1),
                "seconds": round(e["seconds"], 2),
                "loss": round(e["loss"], 4),
            }
            for e in epochs
        ],
    }


def summarise(rounds, backends):
    """Median last-epoch tokens/s per backend, ratios to TensorFlow."""
    rates = {
        b: [r[b]["epochs"][-1]["tokens_per_second"] for r in rounds]
        for b in backends
    }
    medians = {b: statistics.median(v) for b, v in rates.items()}
    summary = {"tokens_per_second_median": medians, "ratios_to_tensorflow": {}}
    summary["last_epoch_loss"] = {
        b: [r[b]["epochs"][-1]["loss"] for r in rounds] for b in backends
    }
    if "tensorflow" in medians:
        for b in backends:
            per_round = [x / t for x, t in zip(rates[b], rates["tensorflow"])]
            summary["ratios_to_tensorflow"][b] = {
                "ratio_of_medians": round(
                    medians[b] / medians["tensorflow"], 3
                ),
                "per_round_min": round(min(per_round), 3),
                "per_round_max": round(max(per_round), 3),
            }
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--config", default="small")
    parser.add_argument("--text", default=TRAIN_TEXT)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--out", default=os.path.join(HERE, "results", "training_backends.json")
    )
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    for backend in backends:
        if backend not in BACKENDS:
            parser.error(
                f"--backends: expected names from {BACKENDS}, got {backend!r}"
            )
    sentences = read_sentences(args.text, args.lines, max_tokens=64)
    tmp = tempfile.mkdtemp(prefix="training_backends_")
    train = os.path.join(tmp, "train.txt")
    with open(train, "w", encoding="utf-8") as f:
        f.writelines(" ".join(s) + "\n" for s in sentences)
    vocab = os.path.join(tmp, "vocab.txt")
    done, _ = _keras_elmo(
        "vocab",
        train,
        "-o",
        vocab,
        env=_backend_env("tensorflow", args.threads),
        threads=args.threads,
    )
    if done.returncode != 0:
        raise SystemExit(f"keras-elmo vocab failed: {done.stderr[-2000:]}")
    with open(vocab, encoding="utf-8") as f:
        vocabulary_size = sum(1 for _ in f)
    rounds, skipped, loads = [], {}, []
    for index in range(args.rounds):
        order = backends if index % 2 == 0 else backends[::-1]
        result = {}
        for backend in order:
            if backend in skipped:
                continue
            loads.append(os.getloadavg()[0])
            run = train_once(
                backend, args, train, vocab, os.path.join(tmp, backend)
            )
            if "error" in run:
                skipped[backend] = run["error"]
                continue
            result[backend] = dict(run, load_before=loads[-1])
            print(json.dumps({"round": index + 1, backend: run}), flush=True)
        rounds.append(result)
    ran = [b for b in backends if b not in skipped]
    payload = {
        "provenance": provenance(
            " ".join(["training_backends.py", *(argv or sys.argv[1:])]),
            written=[args.out],
            modules=[
                "keras_elmo/training/trainer.py",
                "keras_elmo/training/neutral_trainer.py",
                "keras_elmo/training/steps.py",
            ],
        ),
        "what": (
            "keras-elmo train with no tuning flags under each Keras backend "
            "(fresh process per run, same real lines, vocabulary and seed); "
            "tokens/s = forward tokens / epoch seconds from OUT/history.json, "
            "median over rounds of the last epoch; ratio to TensorFlow's "
            "median with the per-round range"
        ),
        "text": os.path.relpath(args.text, os.path.dirname(HERE)),
        "config": args.config,
        "lines": args.lines,
        "tokens": sum(len(s) for s in sentences),
        "vocabulary_size": vocabulary_size,
        "steps_per_epoch": args.steps,
        "epochs": args.epochs,
        "threads": args.threads,
        "skipped": skipped,
        "summary": summarise(rounds, ran) if ran else {},
        "rounds": rounds,
    }
    write_json(args.out, payload)
    print(json.dumps(payload["summary"], indent=1))


if __name__ == "__main__":
    main()
