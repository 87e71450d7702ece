"""The paper's Tables 1, 2 and 3 at our scale: GloVe baseline vs + ELMo.

    python examples/fetch_paper_data.py glove sentiment snli   # once
    nice python examples/paper_tables.py table1               # POS, sentiment
    python examples/paper_tables.py table1 --tasks snli
    python examples/paper_tables.py table2   # last layer / lambda=1 / 0.001
    python examples/paper_tables.py table3   # ELMo at input / input+output

Each task model (`task_models.py`) has token features `[GloVe (frozen);
char-CNN]`; the ELMo variants add the shipped `elmo_small_en` (frozen,
its `ScalarMix` trained, `task_models.ElmoOptions`). Every variant is
trained with `--seeds` seeds (initialisation, batch order, dropout; the
data is the same), picked by dev accuracy, scored on test; the mean and
sample standard deviation over seeds go to `--out`.json / .md, with the
commit, machine, load and date (`keras_elmo.utils.provenance`).

Table 1 (Peters et al. 2018): baseline vs + ELMo per task, with the
relative error reduction. Table 2: ELMo from the last layer only vs all
layers with `l2_coef` (lambda) 1 and 0.001. Table 3: ELMo at the input
only vs at input and output (a second, independent mix). With
`--cove-encoder` (from `train_cove.py`) Table 1 gains `+ CoVe`:
`[GloVe; char-CNN; CoVe]`, the encoder's top layer (McCann et al. 2017).
"""

import argparse
import os
import sys
import time

import bilm_cache
import keras
import numpy as np
import paper_data
import task_models
import task_training
import tensorflow as tf
from fetch_paper_data import DEFAULT_OUT

from keras_elmo.utils.atomic import atomic_write
from keras_elmo.utils.provenance import provenance
from keras_elmo.utils.provenance import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_POS = os.path.join(HERE, "..", "..", "shared", "data", "ud_en_ewt")
NUM_CLASSES = {"pos": 18, "sentiment": 2, "snli": 3}

# variant -> ElmoOptions keywords (None: no ELMo; the "cove" variant adds
# CoVe features to the GloVe baseline instead).
VARIANTS = {
    "baseline": None,
    "cove": None,
    "elmo": {"l2_coef": 0.001},
    "elmo_last_only": {"last_only": True},
    "elmo_l2_1": {"l2_coef": 1.0},
    "elmo_l2_0.001": {"l2_coef": 0.001},
    "elmo_input_output": {"l2_coef": 0.001, "at_output": True},
}
TABLES = {
    "table1": (("pos", "sentiment"), ("baseline", "elmo")),
    # The baseline is Table 1's (the same seeds give the same numbers).
    "table2": (
        ("pos", "sentiment"),
        ("elmo_last_only", "elmo_l2_1", "elmo_l2_0.001"),
    ),
    "table3": (("sentiment", "snli"), ("elmo", "elmo_input_output")),
}
LABELS = {
    "baseline": "GloVe + char-CNN",
    "cove": "+ CoVe",
    "elmo": "+ ELMo (input)",
    "elmo_last_only": "+ ELMo, last layer only",
    "elmo_l2_1": "+ ELMo, all layers, lambda=1",
    "elmo_l2_0.001": "+ ELMo, all layers, lambda=0.001",
    "elmo_input_output": "+ ELMo (input and output)",
}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("table", choices=sorted(TABLES))
    parser.add_argument("--tasks", default=None, help="e.g. pos,sentiment")
    parser.add_argument("--data-dir", default=DEFAULT_OUT)
    parser.add_argument("--pos-dir", default=DEFAULT_POS)
    parser.add_argument("--model", default="elmo_small_en")
    parser.add_argument(
        "--cove-encoder",
        default=None,
        help="cove_encoder.keras from train_cove.py: adds the + CoVe "
        "column to table1.",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--pos-train", type=int, default=2000)
    parser.add_argument("--snli-train", type=int, default=10000)
    parser.add_argument("--dev", type=int, default=1000, help="max dev size")
    parser.add_argument(
        "--test", type=int, default=None, help="max test size (smoke)"
    )
    parser.add_argument("--epochs", type=float, default=4.0)
    parser.add_argument("--max-steps", type=int, default=1200)
    parser.add_argument("--evaluations", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--cache-dir", default=bilm_cache.DEFAULT_CACHE_DIR)
    parser.add_argument("--out", default=None, help="results/<table> stem")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be a positive integer, got {args.seeds}.")
    return args


def load_task(task, args):
    """`{"train", "dev", "test"}` example lists of `task`."""
    if task == "pos":
        path = os.path.join(args.pos_dir, "en_ewt-ud-1.2-{}.conllu.gz")
        train = paper_data.read_pos(path.format("train"))
        # A fixed random subset (the same for every seed and variant).
        index = np.sort(
            np.random.default_rng(0).permutation(len(train))[: args.pos_train]
        )
        return {
            "train": [train[i] for i in index],
            "dev": paper_data.read_pos(path.format("dev"), args.dev),
            "test": paper_data.read_pos(path.format("test"), args.test),
        }
    if task == "sentiment":
        path = os.path.join(args.data_dir, "sentiment", "{}.tsv")
        return {
            "train": paper_data.read_sentiment(path.format("train")),
            "dev": paper_data.read_sentiment(path.format("dev"), args.dev),
            "test": paper_data.read_sentiment(path.format("test"), args.test),
        }
    train_path = os.path.join(args.data_dir, "snli", "train_subset.jsonl")
    return {
        "train": paper_data.read_snli(train_path, args.snli_train),
        # Dev: pairs after the training ones (SNLI's own dev set is not in
        # the archive), so dev never overlaps train.
        "dev": paper_data.read_snli(train_path, args.dev, args.snli_train),
        "test": paper_data.read_snli(
            os.path.join(args.data_dir, "snli", "test.jsonl"), args.test
        ),
    }


def all_sentences(data):
    return [s for split in data.values() for e in split for s in e[0]]


def train_variant(task, variant, data, vocab, caches, seed, args, log):
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    options = VARIANTS[variant]
    elmo, cove_dim, used = None, 0, {}
    if variant == "cove":
        used = {"cove": caches["cove"]}
        cove_dim = used["cove"][data["train"][0][0][0]].shape[-1]
    if options is not None:
        used = {"bilm": caches["bilm"]}
        some = used["bilm"][data["train"][0][0][0]]
        elmo = task_models.ElmoOptions(
            num_layers=some.shape[1], dim=some.shape[2], **options
        )
    model = task_models.build_task_model(
        task,
        vocab.matrix,
        vocab.num_chars,
        NUM_CLASSES[task],
        vocab.max_word_chars,
        elmo=elmo,
        hidden=args.hidden,
        cove_dim=cove_dim,
    )
    trainer = task_training.TaskTrainer(
        model,
        vocab,
        used,
        per_token=task == "pos",
        learning_rate=args.learning_rate,
        batch_size=args.batch_size,
    )
    per_epoch = -(-len(data["train"]) // args.batch_size)
    steps = min(args.max_steps, max(1, int(args.epochs * per_epoch)))
    start = time.time()
    dev = trainer.fit(
        data["train"], data["dev"], steps, args.evaluations, seed, log
    )
    result = {
        "seed": seed,
        "steps": steps,
        "dev": dev,
        "test": trainer.accuracy(data["test"]),
        "seconds": time.time() - start,
    }
    for k in range(2 if elmo and elmo.at_output else 1 if elmo else 0):
        mix = model.get_layer(f"scalar_mix_{k}")
        s = np.asarray(mix.scalar_parameters.numpy(), np.float64)
        weights = np.exp(s - s.max())
        result[f"mix_weights_{k}"] = (weights / weights.sum()).tolist()
        result[f"gamma_{k}"] = float(mix.gamma.numpy())
    log(
        f"{task} {variant} seed {seed}: dev {dev:.4f} test "
        f"{result['test']:.4f} ({result['seconds']:.0f} s, {steps} steps)"
    )
    return result


def summarize(runs):
    tests = np.array([r["test"] for r in runs])
    return {
        "mean": float(tests.mean()),
        "std": float(tests.std(ddof=1)) if len(tests) > 1 else 0.0,
        "seeds": len(tests),
    }


def run_task(task, variants, args, bilm, log):
    data = load_task(task, args)
    glove_words, glove_vectors = paper_data.read_glove(
        os.path.join(args.data_dir, "glove"),
        keep={t.lower() for s in all_sentences(data) for t in s},
    )
    vocab = task_training.TaskVocabulary(
        glove_words,
        glove_vectors,
        [s for e in data["train"] for s in e[0]],
    )
    caches = {}
    if any(VARIANTS[v] is not None for v in variants):
        caches["bilm"] = task_training.ElmoCache(bilm, args.cache_dir)
    if "cove" in variants:
        caches["cove"] = task_training.CoveCache(
            args.cove_encoder, vocab, args.cache_dir
        )
    for name, cache in caches.items():
        start = time.time()
        for split, examples in data.items():
            cache.add([s for e in examples for s in e[0]], f"{task}-{split}")
        log(f"{task}: {name} features ready ({time.time() - start:.0f} s)")
    result = {
        "sizes": {split: len(examples) for split, examples in data.items()},
        "glove_coverage": vocab.coverage(all_sentences(data)),
        "variants": {},
    }
    for variant in variants:
        runs = [
            train_variant(task, variant, data, vocab, caches, seed, args, log)
            for seed in range(args.seeds)
        ]
        result["variants"][variant] = {"runs": runs, **summarize(runs)}
    base = result["variants"].get("baseline")
    elmo = result["variants"].get("elmo")
    if base and elmo and base["mean"] < 1.0:
        result["relative_error_reduction"] = (elmo["mean"] - base["mean"]) / (
            1.0 - base["mean"]
        )
    return result


def markdown(results):
    variants = results["variants"]
    reduction = any(
        "relative_error_reduction" in e for e in results["tasks"].values()
    )
    lines = [
        f"# {results['table']}: test accuracy (%), mean +- std over "
        f"{results['seeds']} seeds",
        "",
        "| task | train | test | "
        + " | ".join(LABELS[v] for v in variants)
        + (" | rel. err. red. |" if reduction else " |"),
        "| --- | ---: | ---: |"
        + " ---: |" * len(variants)
        + (" ---: |" if reduction else ""),
    ]
    for task, entry in results["tasks"].items():
        cells = [
            f"{100 * entry['variants'][v]['mean']:.2f} +- "
            f"{100 * entry['variants'][v]['std']:.2f}"
            for v in variants
        ]
        sizes = entry["sizes"]
        row = f"| {task} | {sizes['train']} | {sizes['test']} | "
        row += " | ".join(cells) + " |"
        if "relative_error_reduction" in entry:
            row += f" {100 * entry['relative_error_reduction']:+.1f}% |"
        lines.append(row)
    lines += ["", "Learned softmax(s) (mean over seeds), per ELMo variant:", ""]
    for task, entry in results["tasks"].items():
        for variant, summary in entry["variants"].items():
            for k in (0, 1):
                key = f"mix_weights_{k}"
                if key in summary["runs"][0]:
                    mean = np.mean([r[key] for r in summary["runs"]], axis=0)
                    text = ", ".join(f"{w:.3f}" for w in mean)
                    lines.append(f"- {task} {variant} mix {k}: [{text}]")
    p = results["provenance"]
    lines += [
        "",
        f"Command: `{results['command']}`; model {results['model']} "
        f"(weights digest {results['weights_digest']}); commit "
        f"{p['commit']}; {p['cpu_model']}, {p['cpu_cores']} cores, load "
        f"{p['load_average']}; {p['date_utc']} UTC; "
        f"{results['seconds']:.0f} s.",
        "",
    ]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    tasks, variants = TABLES[args.table]
    if args.cove_encoder and args.table == "table1":
        variants = ("baseline", "cove", "elmo")
    if args.tasks:
        tasks = tuple(t for t in args.tasks.split(",") if t)
        bad = sorted(set(tasks) - set(task_models.TASKS))
        if bad:
            raise ValueError(
                f"Received an invalid value for argument `--tasks`: {bad}, "
                f"expected some of {task_models.TASKS}."
            )

    def log(message):
        if not args.quiet:
            print(message, flush=True)

    tf.get_logger().setLevel("ERROR")
    start = time.time()
    bilm = bilm_cache.load_bilm(args.model)
    results = {
        "table": args.table,
        "model": args.model,
        "weights_digest": bilm_cache.weights_digest(bilm),
        "seeds": args.seeds,
        "variants": list(variants),
        "config": {k: v for k, v in vars(args).items() if k != "table"},
        "tasks": {},
    }
    for task in tasks:
        results["tasks"][task] = run_task(task, variants, args, bilm, log)
    results["seconds"] = time.time() - start
    results["command"] = "python examples/paper_tables.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    results["provenance"] = provenance(results["command"])
    text = markdown(results)
    print(text)
    if args.out:
        write_json(args.out + ".json", results)
        with atomic_write(args.out + ".md") as f:
            f.write(text)
    return results


if __name__ == "__main__":
    main()
