"""Latency of an exported SavedModel: one sentence per call, p50 / p99.

    python benchmarks/saved_model_latency.py [--preset elmo_small_en]
        [--model DIR] [--tokens 20] [--calls 300] [--warmup 20]
        [--threads 2] [--vocab]

Exports `BiLM.from_preset(--preset)` with `keras_elmo.export_saved_model`
to a temporary directory (or uses the SavedModel `--model`), loads it with
`tf.saved_model.load` (what TF Serving and `hub.load` do: no keras_elmo
objects), and calls the `default` signature (one sentence of `--tokens`
whitespace-separated words) and the `tokens` signature (`[1, --tokens]`
strings plus `sequence_len`) `--calls` times each after `--warmup` calls,
alternately, each call timed to the outputs' arrival in NumPy. Every call
gets a different sentence (drawn from a fixed word list, seeded), so no
result cache can answer. Prints p50, p90, p99 and max in ms. With
`--vocab`, the export holds the token-embedding cache of the preset's
`vocab.txt` (`export_saved_model(..., vocabulary=...)`).
"""

import argparse
import os
import random
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

WORDS = (
    "the of and to in a is that for it as was with be by on not he I this "
    "are or his from at which but have an they you were her she there one "
    "all we their can has been if more when will would who so no "
    "government president international nevertheless approximately "
    "characteristics , . ; ! ? understanding representation language"
).split()


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
    args = parser.parse_args(argv)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.model
        if path is None:
            import keras_elmo

            path = os.path.join(tmp, "elmo")
            from keras_elmo.presets import preset_dir

            bilm = keras_elmo.BiLM.from_preset(args.preset)
            vocab = os.path.join(preset_dir(args.preset), "vocab.txt")
            keras_elmo.export_saved_model(
                bilm, path, vocabulary=vocab if args.vocab else None
            )
            del bilm
        model = tf.saved_model.load(path)
        default = model.signatures["default"]
        tokens_fn = model.signatures["tokens"]
        rng = random.Random(0)

        def sentence():
            return [rng.choice(WORDS) for _ in range(args.tokens)]

        def call_default():
            text = tf.constant([" ".join(sentence())])
            return default(text=text)["elmo"].numpy()

        def call_tokens():
            tokens = tf.constant([sentence()])
            length = tf.constant([args.tokens], tf.int32)
            out = tokens_fn(tokens=tokens, sequence_len=length)
            return out["elmo"].numpy()

        calls = {"default": call_default, "tokens": call_tokens}
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
                assert out.shape[:2] == (1, args.tokens), out.shape
        print(
            f"{path if args.model else args.preset}"
            f"{' with token cache' if args.vocab else ''}: 1 x {args.tokens} "
            f"tokens, {args.calls} calls per signature after {args.warmup} "
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


if __name__ == "__main__":
    main()
