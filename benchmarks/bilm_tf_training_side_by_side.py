"""bilm-tf's own trainer against `keras-elmo train`, same data and steps.

    bash tools/simple_elmo_ref/setup_simple_elmo.sh      # the side venv
    python benchmarks/bilm_tf_training_side_by_side.py \\
        [--config small] [--batch-size 128] [--num-sampled 8192] \\
        [--steps 100] [--seed 1] [--threads 2] [--rounds 1] \\
        [--train-tokens 300000] [--vocab-size 50000] [--valid-lines 1000] \\
        [--work /tmp/bilm_tf_side_by_side] \\
        [--out benchmarks/results/bilm_tf_training.json]

The data (built in `--work`, never committed, from ../shared/data/en_pd_lm):

- training lines: every k-th sentence of `train.txt.gz` (k chosen for
  ~`--train-tokens` tokens, so every source is in), the tokens run
  together and cut into 19-word lines (bilm-tf's windows of 20 targets:
  19 words + `</S>`);
- the vocabulary: `keras-elmo vocab` over all of `train.txt.gz`, at most
  `--vocab-size` words, by frequency (as bilm-tf's sampler wants);
- validation: the first `--valid-lines` lines of `valid.txt.gz`. The test
  split is not read.

Trainers, in turns each round (`--threads` TensorFlow threads each):

- `bilm-tf`: simple_elmo 0.9.2's `training.train` (bilm-tf's graph) in
  its side venv, through tools/simple_elmo_ref/train_bilm_tf.py: its
  stream of windows with states carried, Adagrad 0.2, the loss x 20.
- `keras_elmo/bilm-tf`: `keras-elmo train --recipe bilm-tf` with the same
  architecture, batch, negatives, steps and seed.
- `keras_elmo/default`: `keras-elmo train` (Adam) with the same batch,
  negatives and steps.
- with `--ablations`, `keras_elmo/bilm-tf` with a difference from our
  earlier recipe put back: the loss not multiplied by 20
  (`--loss-multiplier 1`), negatives drawn with replacement
  (`--sampler replacement`), or both (the recipe before this benchmark).

Every model is scored by one evaluator, `keras-elmo evaluate` (full
softmax, every line from zero states) on the validation lines; bilm-tf's
checkpoint is read by `keras-elmo convert --from-bilm-tf-checkpoint`.
Reported per trainer: validation perplexity, seconds of training (the
steps only) and end to end (the process, start-up included), predicted
tokens per second per direction at the median step after the first two
(steady: bilm-tf's step times are taken when its trainer asks for a
batch, ours from the wall times of the per-step TensorBoard events),
and the perplexity ratio to bilm-tf's. Each trainer is run for
`--steps` steps only, so "time to bilm-tf's perplexity" is reported as an
upper bound: the training seconds of a run that reached it in `--steps`
steps (none when it did not).
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
# This checkout's keras_elmo (not an installed one) writes the provenance,
# so it records this checkout's commit.
sys.path.insert(0, REPO)

import provenance  # noqa: E402

SIDE_PYTHON = os.path.expanduser(
    "~/.cache/keras_elmo_side/simple_elmo/bin/python"
)
DATA = os.path.join(REPO, "..", "shared", "data", "en_pd_lm")
WORKER = os.path.join(REPO, "tools", "simple_elmo_ref", "train_bilm_tf.py")
TRAINERS = ("bilm-tf", "keras_elmo/bilm-tf", "keras_elmo/default")
# `--ablations`: the bilm-tf recipe with one of its differences undone
# (name -> extra `keras-elmo train` flags).
ABLATIONS = {
    "keras_elmo/bilm-tf,loss x1": ["--loss-multiplier", "1"],
    "keras_elmo/bilm-tf,with replacement": ["--sampler", "replacement"],
    "keras_elmo/bilm-tf,loss x1,with replacement": [
        "--loss-multiplier",
        "1",
        "--sampler",
        "replacement",
    ],
}
LINE_WORDS = 19

# `keras-elmo <args>` with pinned TensorFlow thread pools.
_OURS = (
    "import sys, tensorflow as tf;"
    "tf.config.threading.set_intra_op_parallelism_threads({threads});"
    "tf.config.threading.set_inter_op_parallelism_threads({threads});"
    "from keras_elmo.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="small")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-sampled", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--train-tokens", type=int, default=300_000)
    parser.add_argument("--vocab-size", type=int, default=50_000)
    parser.add_argument("--valid-lines", type=int, default=1000)
    parser.add_argument("--ablations", action="store_true")
    parser.add_argument("--work", default="/tmp/bilm_tf_side_by_side")
    parser.add_argument(
        "--out",
        default=os.path.join(HERE, "results", "bilm_tf_training.json"),
    )
    args = parser.parse_args(argv)
    if not os.path.exists(SIDE_PYTHON):
        raise FileNotFoundError(
            f"No simple_elmo side venv at {SIDE_PYTHON}: run "
            "bash tools/simple_elmo_ref/setup_simple_elmo.sh first."
        )
    os.makedirs(args.work, exist_ok=True)
    data = prepare(args)
    trainers = TRAINERS + (tuple(ABLATIONS) if args.ablations else ())
    runs = {name: [] for name in trainers}
    for round_ in range(args.rounds):
        order = trainers if round_ % 2 == 0 else trainers[::-1]
        for name in order:
            folder = os.path.join(
                args.work, f"r{round_}", name.replace("/", "_")
            )
            load = os.getloadavg()[0]
            run = train(name, folder, data, args)
            run["perplexity"] = evaluate(run["model"], data, args)
            run["load_1min_before"] = load
            runs[name].append(run)
            print(name, json.dumps(run), file=sys.stderr)
    record = summarise(runs, args)
    record["data"] = {k: v for k, v in data.items() if k != "options"}
    record["provenance"] = provenance.provenance(
        written=[args.out],
        modules=[
            "keras_elmo/training/trainer.py",
            "keras_elmo/training/fused_loss.py",
            "keras_elmo/training/training_config.py",
            "tools/simple_elmo_ref/train_bilm_tf.py",
        ],
    )
    provenance.write_json(args.out, record)
    print(json.dumps(record["summary"], indent=1))
    return 0


def prepare(args):
    """Training lines, vocabulary, validation lines and both options."""
    work = args.work
    train_path = os.path.join(work, "train.txt")
    with gzip.open(os.path.join(DATA, "train.txt.gz"), "rt") as f:
        sentences = [line.split() for line in f]
    total = sum(len(s) for s in sentences)
    every = max(1, total // args.train_tokens)
    stream = [w for s in sentences[::every] for w in s]
    with open(train_path, "w", encoding="utf-8") as f:
        for i in range(0, len(stream) - LINE_WORDS + 1, LINE_WORDS):
            f.write(" ".join(stream[i : i + LINE_WORDS]) + "\n")
    valid_path = os.path.join(work, "valid.txt")
    with (
        gzip.open(os.path.join(DATA, "valid.txt.gz"), "rt") as f,
        open(valid_path, "w", encoding="utf-8") as out,
    ):
        for i, line in enumerate(f):
            if i >= args.valid_lines:
                break
            out.write(line)
    vocab = os.path.join(work, "vocab.txt")
    ours(
        ["vocab", os.path.join(DATA, "train.txt.gz"), "-o", vocab]
        + ["--max-size", str(args.vocab_size), "--force"],
        args.threads,
    )
    with open(vocab, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    options = architecture_options(args.config)
    bilm_tf = json.loads(json.dumps(options))
    bilm_tf["char_cnn"]["n_characters"] = 261  # bilm-tf trains with 261
    bilm_tf.update(
        bidirectional=True,
        dropout=0.1,
        all_clip_norm_val=10.0,
        batch_size=args.batch_size,
        n_tokens_vocab=vocab_size,
        unroll_steps=LINE_WORDS + 1,
        n_negative_samples_batch=args.num_sampled,
    )
    options_path = os.path.join(work, "options.json")
    bilm_tf_path = os.path.join(work, "bilm_tf_options.json")
    for path, value in ((options_path, options), (bilm_tf_path, bilm_tf)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(value, f)
    return {
        "train": train_path,
        "train_lines": len(stream) // LINE_WORDS,
        "train_tokens": (len(stream) // LINE_WORDS) * LINE_WORDS,
        "every_kth_sentence": every,
        "valid": valid_path,
        "valid_lines": args.valid_lines,
        "vocab": vocab,
        "vocab_size": vocab_size,
        "options": options_path,
        "bilm_tf_options": bilm_tf_path,
        "architecture": options,
    }


def architecture_options(config):
    """The options dict of an architecture name or an options.json."""
    if os.path.exists(config):
        with open(config, encoding="utf-8") as f:
            return json.load(f)
    code = (
        "import json; from keras_elmo.config import BiLMConfig; "
        f"print(json.dumps(BiLMConfig.from_architecture({config!r})"
        ".to_options_dict()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def ours(command, threads):
    """Runs `keras-elmo COMMAND` with pinned threads; its stdout."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _OURS.format(threads=threads)] + command,
        check=True,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    return out.stdout, time.perf_counter() - started


def train(name, folder, data, args):
    """One trainer's run: its model folder and timings."""
    if name == "bilm-tf":
        return train_bilm_tf(folder, data, args)
    recipe = name.split("/")[1].split(",")[0]
    _, wall = ours(
        ["train", "--train", data["train"], "--vocab", data["vocab"]]
        + ["--architecture", data["options"], "--out", folder]
        + ["--recipe", recipe, "--batch-size", str(args.batch_size)]
        + ["--num-sampled", str(args.num_sampled), "--epochs", "1"]
        + ["--steps-per-epoch", str(args.steps), "--seed", str(args.seed)]
        + ["--log-every", "1", "--quiet", "--force"]
        + ABLATIONS.get(name, []),
        args.threads,
    )
    with open(os.path.join(folder, "history.json"), encoding="utf-8") as f:
        epoch = json.load(f)[-1]
    steps = step_seconds(folder)
    tokens = epoch["tokens_per_second"] * epoch["seconds"] / args.steps
    return {
        "model": folder,
        "steps": epoch["steps"],
        "train_seconds": epoch["seconds"],
        "end_to_end_seconds": wall,
        "tokens_per_step_per_direction": tokens,
        "steady_tokens_per_second": steady(steps, tokens),
        "step_seconds": steps,
        "training_loss": epoch["loss"],
    }


def step_seconds(folder):
    """Seconds between consecutive steps, from the wall times of the
    run's TensorBoard `loss` events (`--log-every 1`: one per step)."""
    import glob

    import tensorflow as tf

    times = {}
    for path in glob.glob(os.path.join(folder, "logs", "*tfevents*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == "loss":
                    times[event.step] = event.wall_time
    ordered = [times[k] for k in sorted(times)]
    return [b - a for a, b in zip(ordered, ordered[1:])]


def steady(steps, tokens_per_step):
    if not steps or len(steps) < 4:
        return None
    return tokens_per_step / statistics.median(steps[2:])


def train_bilm_tf(folder, data, args):
    report = folder + ".report.json"
    started = time.perf_counter()
    subprocess.run(
        [SIDE_PYTHON, WORKER, "--options", data["bilm_tf_options"]]
        + ["--vocab", data["vocab"], "--train", data["train"]]
        + ["--out", folder, "--steps", str(args.steps)]
        + ["--seed", str(args.seed), "--threads", str(args.threads)]
        + ["--report", report],
        check=True,
        capture_output=True,
        env=dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2"),
    )
    wall = time.perf_counter() - started
    with open(report, encoding="utf-8") as f:
        timing = json.load(f)
    model = folder + "_model"
    os.makedirs(model, exist_ok=True)
    ours(
        ["convert", "--from-bilm-tf-checkpoint", folder]
        + ["--options", os.path.join(folder, "options.json")]
        + ["--to-options", os.path.join(model, "options.json")]
        + ["--to-weights", os.path.join(model, "weights.hdf5")]
        + ["--to-softmax", os.path.join(model, "softmax.hdf5"), "--force"],
        args.threads,
    )
    with (
        open(data["vocab"], encoding="utf-8") as f,
        open(os.path.join(model, "vocab.txt"), "w", encoding="utf-8") as out,
    ):
        out.write(f.read())
    tokens = timing["tokens_per_step_per_direction"]
    return {
        "model": model,
        "steps": timing["steps"],
        "train_seconds": sum(timing["step_seconds"]),
        "end_to_end_seconds": wall,
        "tokens_per_step_per_direction": tokens,
        "steady_tokens_per_second": steady(timing["step_seconds"], tokens),
        "step_seconds": timing["step_seconds"],
    }


def evaluate(model, data, args):
    out, _ = ours(
        ["evaluate", "--data", data["valid"], "--model", model, "--json"],
        args.threads,
    )
    return json.loads(out.strip().splitlines()[-1])["perplexity"]


def summarise(runs, args):
    def median(name, key):
        values = [r[key] for r in runs[name] if r.get(key) is not None]
        return statistics.median(values) if values else None

    reference = median("bilm-tf", "perplexity")
    summary = {}
    for name in runs:
        ppl = median(name, "perplexity")
        seconds = median(name, "train_seconds")
        summary[name] = {
            "validation_perplexity": ppl,
            "perplexity_vs_bilm_tf": ppl / reference,
            "train_seconds": seconds,
            "end_to_end_seconds": median(name, "end_to_end_seconds"),
            "steady_tokens_per_second": median(
                name, "steady_tokens_per_second"
            ),
            "seconds_to_bilm_tf_perplexity_at_most": (
                seconds if ppl <= reference else None
            ),
        }
    return {
        "settings": {
            "config": args.config,
            "batch_size": args.batch_size,
            "num_sampled": args.num_sampled,
            "steps": args.steps,
            "seed": args.seed,
            "threads": args.threads,
            "rounds": args.rounds,
            "ablations": args.ablations,
        },
        "summary": summary,
        "runs": runs,
    }


if __name__ == "__main__":
    sys.exit(main())
