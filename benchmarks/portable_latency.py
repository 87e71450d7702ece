"""One-sentence latency: ONNX Runtime vs LiteRT vs the SavedModel, one run.

    python benchmarks/portable_latency.py [--preset elmo_small_en]
        [--tokens 20] [--calls 300] [--warmup 20] [--threads 2]
        [--json benchmarks/results/portable_latency.json]

Exports `BiLM.from_preset(--preset)` three ways into a temporary folder:
`keras_elmo.export_saved_model` (loaded with `tf.saved_model.load`,
called through its `tokens` signature) and `keras_elmo.export_portable`
as ONNX and LiteRT, each read by `keras_elmo/export/portable_runtime.py`
(`PortableElmo`: char ids in numpy, then onnxruntime or ai-edge-litert).
Each call embeds one sentence of `--tokens` words, a different one each
call (drawn, seeded, from `real_text.WORDS`, the word list of every
inference benchmark here), string tokens in and the outputs in numpy
out: the char-id mapping is inside the timing for all three. The three
are called in turn, `--calls` times each after `--warmup` calls, with
`--threads` intra-op threads each. Prints p50 / p90 / p99 in ms and the
SavedModel's p50 over each portable runtime's; `--json` also writes them
with provenance.
"""

import argparse
import os
import random
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from real_text import WORDS  # noqa: E402  (bench_allennlp.py's word list)
from saved_model_latency import percentile  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="elmo_small_en")
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="write the percentiles here too")
    args = parser.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    import keras_elmo
    from keras_elmo.export import portable_runtime

    try:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    except RuntimeError:
        # TensorFlow already ran in this process (the script called from a
        # test): its thread pools are fixed; a real run is a fresh process.
        print("TensorFlow's thread counts were already set; left as they are")
    rng = random.Random(0)

    def sentence():
        return [rng.choice(WORDS) for _ in range(args.tokens)]

    with tempfile.TemporaryDirectory() as tmp:
        bilm = keras_elmo.BiLM.from_preset(args.preset)
        saved = keras_elmo.export_saved_model(bilm, os.path.join(tmp, "sm"))
        paths = {}
        for fmt, suffix in (("onnx", ".onnx"), ("litert", ".tflite")):
            paths[fmt] = keras_elmo.export_portable(
                bilm, os.path.join(tmp, f"elmo{suffix}"), format=fmt
            )
        signature = tf.saved_model.load(saved).signatures["tokens"]

        def call_saved_model(tokens):
            out = signature(
                tokens=tf.constant([tokens]),
                sequence_len=tf.constant([len(tokens)], tf.int32),
            )
            return out["elmo"].numpy()

        calls = {"savedmodel": call_saved_model}
        for fmt, path in paths.items():
            reader = portable_runtime.PortableElmo(
                path, num_threads=args.threads
            )
            calls[fmt] = lambda tokens, r=reader: r([tokens])["elmo"]

        # The three agree on a sentence (a broken export is not timed).
        probe = sentence()
        reference = calls["savedmodel"](probe)
        scale = float(np.abs(reference).max())
        deviation = {}
        for name in paths:
            deviation[name] = float(
                np.abs(calls[name](probe) - reference).max()
            )
            assert deviation[name] <= 1e-5 * scale, (name, deviation[name])

        for fn in calls.values():
            for _ in range(args.warmup):
                fn(sentence())
        times = {name: [] for name in calls}
        start_load = os.getloadavg()[0]
        for _ in range(args.calls):
            for name, fn in calls.items():
                tokens = sentence()
                start = time.perf_counter()
                out = fn(tokens)
                times[name].append((time.perf_counter() - start) * 1e3)
                assert out.shape[:2] == (1, args.tokens)
    end_load = os.getloadavg()[0]
    p50 = {name: percentile(values, 50) for name, values in times.items()}
    print(
        f"{args.preset}: one sentence of {args.tokens} tokens, {args.calls} "
        f"calls each after {args.warmup} warm-up, threads={args.threads}, "
        f"load {start_load:.1f} -> {end_load:.1f}"
    )
    for name, values in times.items():
        print(
            f"  {name:>10}: p50 {p50[name]:6.2f} ms  "
            f"p90 {percentile(values, 90):6.2f} ms  "
            f"p99 {percentile(values, 99):6.2f} ms"
        )
    speedup = {name: p50["savedmodel"] / p50[name] for name in paths}
    for name, ratio in speedup.items():
        print(f"  savedmodel p50 / {name} p50: {ratio:.2f}x")
    if args.json:
        import provenance

        provenance.write_json(
            args.json,
            {
                "provenance": provenance.provenance(),
                "model": args.preset,
                "tokens": args.tokens,
                "calls": args.calls,
                "threads": args.threads,
                "load": [round(start_load, 2), round(end_load, 2)],
                "elmo_deviation_over_max": {
                    name: value / scale for name, value in deviation.items()
                },
                "ms": {
                    name: {
                        "p50": round(p50[name], 3),
                        "p90": round(percentile(v, 90), 3),
                        "p99": round(percentile(v, 99), 3),
                    }
                    for name, v in times.items()
                },
                "savedmodel_p50_over": {
                    name: round(ratio, 3) for name, ratio in speedup.items()
                },
            },
        )


if __name__ == "__main__":
    main()
