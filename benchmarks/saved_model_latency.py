"""Latency of an exported SavedModel: one sentence per call, p50 / p99.

    python benchmarks/saved_model_latency.py [--preset elmo_small_en]
        [--model DIR] [--tokens 20] [--calls 300] [--warmup 20]
        [--threads 2] [--vocab] [--lengths 20,3,7,12,5,9,16,2]
        [--loops packed,padded] [--json OUT]

Exports `BiLM.from_preset(--preset)` with `keras_elmo.export_saved_model`
to a temporary directory (or uses the SavedModel `--model`), loads it with
`tf.saved_model.load` (what TF Serving and `hub.load` do: no keras_elmo
objects), and calls the `default` signature (one sentence of `--tokens`
whitespace-separated words) and the `tokens` signature (`[1, --tokens]`
strings plus `sequence_len`) `--calls` times each after `--warmup` calls,
alternately, each call timed to the outputs' arrival in NumPy. Every call
gets a different sentence (drawn, seeded, from `real_text.WORDS`, the word
list of every inference benchmark here), so no result cache can answer.
Prints p50, p90, p99 and max in ms. With `--vocab`, the export holds the
token-embedding cache of the preset's `vocab.txt`
(`export_saved_model(..., vocabulary=...)`).

`--lengths` makes each call a batch of sentences of those lengths instead
(one a comma-separated entry). `--loops packed,padded` exports the preset
twice, with the biLSTM over real tokens only (`packed`, the default) and
with `ResidualBiLSTM.packed = False` (`padded`, every release before
issue 16), and alternates calls between them. `--json` also writes the
percentiles with provenance.
"""

import argparse
import os
import random
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from real_text import WORDS  # noqa: E402  (bench_allennlp.py's word list)


def percentile(values, q):
    """The `q`-th percentile (nearest rank) of `values`."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil
    return ordered[int(rank) - 1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="elmo_small_en")
    parser.add_argument("--model", help="An exported SavedModel directory.")
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--vocab",
        action="store_true",
        help="Export with the preset's vocab.txt as token cache.",
    )
    parser.add_argument("--lengths", help="comma-separated lengths")
    parser.add_argument("--loops", default="packed")
    parser.add_argument("--json", help="write the percentiles here too")
    args = parser.parse_args(argv)
    lengths = (
        [int(n) for n in args.lengths.split(",")]
        if args.lengths
        else [args.tokens]
    )
    loops = args.loops.split(",")
    if args.model and loops != ["packed"]:
        parser.error("`--loops` needs an export of `--preset`, not `--model`.")

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        rng = random.Random(0)
        calls = {}
        for loop in loops:
            model = tf.saved_model.load(
                args.model or export(args, loop, os.path.join(tmp, loop))
            )
            for name, fn in make_calls(tf, model, rng, lengths).items():
                calls[name if len(loops) == 1 else f"{loop}/{name}"] = fn
        for fn in calls.values():
            for _ in range(args.warmup):
                fn()
        times = {name: [] for name in calls}
        start_load = os.getloadavg()[0]
        for _ in range(args.calls):
            for name, fn in calls.items():
                start = time.perf_counter()
                out = fn()
                times[name].append((time.perf_counter() - start) * 1e3)
                assert out.shape[:2] == (len(lengths), max(lengths))
        print(
            f"{args.model or args.preset}"
            f"{' with token cache' if args.vocab else ''}: sentences of "
            f"{lengths} tokens, {args.calls} calls each after {args.warmup} "
            f"warm-up, threads={args.threads}, load "
            f"{start_load:.1f} -> {os.getloadavg()[0]:.1f}"
        )
        for name, values in times.items():
            print(
                f"  {name:>8}: p50 {percentile(values, 50):6.1f} ms  "
                f"p90 {percentile(values, 90):6.1f} ms  "
                f"p99 {percentile(values, 99):6.1f} ms  "
                f"max {max(values):6.1f} ms  "
                f"mean {statistics.mean(values):6.1f} ms"
            )
        if args.json:
            import provenance

            provenance.write_json(
                args.json,
                {
                    "provenance": provenance.provenance(),
                    "model": args.model or args.preset,
                    "vocab": args.vocab,
                    "lengths": lengths,
                    "calls": args.calls,
                    "ms": {
                        name: {
                            "p50": round(percentile(v, 50), 2),
                            "p90": round(percentile(v, 90), 2),
                            "p99": round(percentile(v, 99), 2),
                        }
                        for name, v in times.items()
                    },
                },
            )


def export(args, loop, path):
    """Exports `--preset` with the biLSTM's `loop` (packed or padded)."""
    import keras_elmo
    from keras_elmo.presets import preset_dir

    bilm = keras_elmo.BiLM.from_preset(args.preset)
    bilm.bilstm.packed = loop == "packed"
    vocab = os.path.join(preset_dir(args.preset), "vocab.txt")
    keras_elmo.export_saved_model(
        bilm, path, vocabulary=vocab if args.vocab else None
    )
    return path


def make_calls(tf, model, rng, lengths):
    """`{signature: call}`: each call a fresh batch of `lengths` words."""
    default = model.signatures["default"]
    tokens_fn = model.signatures["tokens"]

    def sentences():
        return [[rng.choice(WORDS) for _ in range(n)] for n in lengths]

    def call_default():
        text = tf.constant([" ".join(s) for s in sentences()])
        return default(text=text)["elmo"].numpy()

    def call_tokens():
        rows = sentences()
        tokens = [s + [""] * (max(lengths) - len(s)) for s in rows]
        out = tokens_fn(
            tokens=tf.constant(tokens),
            sequence_len=tf.constant(lengths, tf.int32),
        )
        return out["elmo"].numpy()

    return {"default": call_default, "tokens": call_tokens}


if __name__ == "__main__":
    main()
