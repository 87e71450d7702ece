"""UPOS tagging on UD English-EWT: a BiLSTM baseline vs. the same + ELMo.

Reproduces the setting of Peters et al. (2018), section 3.3: ELMo is
concatenated to the tagger's token representation, `[x_k; ELMo_k]`,
with the biLM frozen and only the task's `ScalarMix` (`s`, `gamma`)
trained. The biLM's layers are computed once per sentence and cached
(`bilm_cache.py`): a `ScalarMix` over the cached layers is mathematically
the same as `keras_elmo.layers.ElmoLayer(bilm, trainable_bilm=False)`
in the model, only much faster on a CPU.

Each run trains both taggers on the same (per-seed) random subset of the
training sentences, picks the best of several dev-accuracy checks and
reports test accuracy, averaged over `--seeds` seeds, for every
`--fractions` entry (paper Fig. 1), plus the learned `softmax(s)`
(paper Fig. 2) with `--plot`.

python examples/pos_tagging.py                        # 100%, 3 seeds
python examples/pos_tagging.py --fractions 0.01,0.1,1 --plot
"""

import argparse
import os
import time

import bilm_cache
import keras
import numpy as np
import pos_data
import pos_tagger
import tensorflow as tf

from keras_elmo.utils.provenance import provenance
from keras_elmo.utils.provenance import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "..", "shared", "data", "ud_en_ewt")
FILES = {
    split: f"en_ewt-ud-1.2-{split}.conllu.gz"
    for split in ("train", "dev", "test")
}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data-dir", default=DEFAULT_DATA)
    parser.add_argument(
        "--model",
        default="elmo_small_en",
        help="Shipped preset, a folder with options.json + weights.hdf5, "
        "or an architecture preset such as tiny (random weights).",
    )
    parser.add_argument(
        "--fractions",
        default="1.0",
        help="Comma-separated fractions of the training sentences.",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--epochs",
        type=float,
        default=4.0,
        help="Passes over the training subset (at least --min-steps).",
    )
    parser.add_argument("--min-steps", type=int, default=600)
    parser.add_argument("--evaluations", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument(
        "--max-sentences",
        type=int,
        default=None,
        help="Read only this many sentences per file (smoke tests).",
    )
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--out-json", default=None)
    parser.add_argument(
        "--plot",
        action="store_true",
        help="Write sample_efficiency.png (2+ fractions) and "
        "scalar_mix_weights.png to --figures-dir.",
    )
    parser.add_argument("--figures-dir", default=os.path.join(HERE, "figures"))
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args(argv)


def load_split(args, split, bilm):
    """Sentences and cached biLM layers of one split."""
    path = os.path.join(args.data_dir, FILES[split])
    sentences = pos_data.read_conllu(path, args.max_sentences)
    layers = bilm_cache.cached_layers(
        bilm,
        args.model,
        path,
        [words for words, _ in sentences],
        cache_dir=args.cache_dir,
        max_sentences=args.max_sentences,
    )
    return sentences, layers


def train_pair(args, data, fraction, seed, log):
    """Baseline and ELMo taggers on one subset; their test accuracies."""
    (train, train_layers), dev, test = data["train"], data["dev"], data["test"]
    index = pos_data.subsample(len(train), fraction, seed)
    subset = [train[i] for i in index]
    subset_layers = [train_layers[i] for i in index]
    vocabs = pos_data.build_vocabularies(subset)
    encoded = {
        "train": pos_data.encode(subset, vocabs),
        "dev": pos_data.encode(dev[0], vocabs),
        "test": pos_data.encode(test[0], vocabs),
    }
    batches_per_epoch = -(-len(subset) // args.batch_size)
    steps = max(args.min_steps, int(args.epochs * batches_per_epoch))
    num_layers, dim = train_layers[0].shape[1:]
    result = {"sentences": len(subset), "steps": steps}
    for kind in ("baseline", "elmo"):
        keras.backend.clear_session()
        keras.utils.set_random_seed(seed)
        model = pos_tagger.build_tagger(
            len(vocabs[0]),
            len(vocabs[1]),
            len(vocabs[2]),
            encoded["train"][0][1].shape[1],
            hidden=args.hidden,
            elmo_layers=num_layers if kind == "elmo" else 0,
            elmo_dim=dim,
        )
        trainer = pos_tagger.TaggerTrainer(
            model, args.learning_rate, args.batch_size
        )
        use = kind == "elmo"
        start = time.time()
        dev_accuracy = trainer.fit(
            encoded["train"],
            encoded["dev"],
            subset_layers if use else None,
            dev[1] if use else None,
            steps=steps,
            evaluations=args.evaluations,
            seed=seed,
            log=log,
        )
        test_accuracy = trainer.accuracy(
            encoded["test"], test[1] if use else None
        )
        result[kind] = {
            "dev": dev_accuracy,
            "test": test_accuracy,
            "seconds": time.time() - start,
        }
        if use:
            mix = model.get_layer("scalar_mix")
            s = np.asarray(mix.scalar_parameters.numpy(), np.float64)
            result[kind]["mix_weights"] = (np.exp(s) / np.exp(s).sum()).tolist()
            result[kind]["gamma"] = float(mix.gamma.numpy())
        log(
            f"fraction {fraction} seed {seed} {kind}: dev {dev_accuracy:.4f} "
            f"test {test_accuracy:.4f} ({time.time() - start:.0f} s)"
        )
    return result


def summarize(runs):
    """Mean/std test accuracy of each kind and the relative error reduction
    `(err_baseline - err_elmo) / err_baseline` of the mean accuracies."""
    summary = {}
    for kind in ("baseline", "elmo"):
        accuracies = np.array([run[kind]["test"] for run in runs])
        summary[kind] = {
            "mean": float(accuracies.mean()),
            "std": float(accuracies.std(ddof=1)) if len(runs) > 1 else 0.0,
        }
    baseline_error = 1.0 - summary["baseline"]["mean"]
    elmo_error = 1.0 - summary["elmo"]["mean"]
    summary["relative_error_reduction"] = (
        (baseline_error - elmo_error) / baseline_error
        if baseline_error > 0
        else 0.0
    )
    weights = np.array([run["elmo"]["mix_weights"] for run in runs])
    summary["mix_weights_mean"] = weights.mean(axis=0).tolist()
    summary["mix_weights_std"] = weights.std(axis=0).tolist()
    return summary


def main(argv=None):
    args = parse_args(argv)
    fractions = [float(f) for f in args.fractions.split(",") if f]
    if args.seeds < 1:
        raise ValueError(
            "Received an invalid value for argument `--seeds`, expected a "
            f"positive integer, got {args.seeds}."
        )

    def log(message):
        if not args.quiet:
            print(message, flush=True)

    # One compiled step per model; TF's "retracing" notice is noise here.
    tf.get_logger().setLevel("ERROR")
    start = time.time()
    bilm = bilm_cache.load_bilm(args.model)
    data = {split: load_split(args, split, bilm) for split in FILES}
    log(f"biLM layers ready ({time.time() - start:.0f} s)")
    results = {
        "model": args.model,
        "weights_digest": bilm_cache.weights_digest(bilm),
        "argv": argv,
        "fractions": {},
    }
    for fraction in fractions:
        runs = [
            train_pair(args, data, fraction, seed, log)
            for seed in range(args.seeds)
        ]
        results["fractions"][str(fraction)] = {
            "runs": runs,
            "summary": summarize(runs),
        }
    results["seconds"] = time.time() - start
    print_table(results)
    if args.out_json:
        results["provenance"] = provenance()
        write_json(args.out_json, results)
    if args.plot:
        import plots

        if len(fractions) > 1:
            plots.sample_efficiency(
                results,
                os.path.join(args.figures_dir, "sample_efficiency.png"),
            )
        plots.scalar_mix_weights(
            results, os.path.join(args.figures_dir, "scalar_mix_weights.png")
        )
    return results


def print_table(results):
    print(f"UPOS test accuracy, model {results['model']} (mean +- std)")
    print(
        "fraction  sentences  baseline          ELMo              "
        "rel. err. red."
    )
    for fraction, entry in results["fractions"].items():
        s = entry["summary"]
        print(
            f"{float(fraction):8.2%}  {entry['runs'][0]['sentences']:9d}  "
            f"{s['baseline']['mean']:.4f} +- {s['baseline']['std']:.4f}  "
            f"{s['elmo']['mean']:.4f} +- {s['elmo']['std']:.4f}  "
            f"{s['relative_error_reduction']:+.1%}"
        )
        weights = ", ".join(f"{w:.3f}" for w in s["mix_weights_mean"])
        print(f"          softmax(s) = [{weights}]")


if __name__ == "__main__":
    main()
