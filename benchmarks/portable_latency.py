"""One-sentence latency: ONNX Runtime vs LiteRT vs the SavedModel, one run.

    python benchmarks/portable_latency.py [--preset elmo_small_en]
        [--tokens 20] [--calls 300] [--warmup 20] [--threads 2]
        [--portable-threads 1,2] [--int8]
        [--json benchmarks/results/portable_latency.json]

Exports `BiLM.from_preset(--preset)` into a temporary folder:
`keras_elmo.export_saved_model` (loaded with `tf.saved_model.load`,
called through its `tokens` signature) and `keras_elmo.export_portable`
as ONNX and LiteRT (float32, and with `--int8` also
`quantize="int8"`), each read by
`keras_elmo/export/portable_runtime.py` (`PortableElmo`: char ids in
numpy, then onnxruntime or ai-edge-litert) once per thread count of
`--portable-threads` (TensorFlow's thread pools are fixed per process,
so the SavedModel runs at `--threads` only).
Each call embeds one sentence of `--tokens` words, a different one each
call (drawn, seeded, from `real_text.WORDS`, the word list of every
inference benchmark here), string tokens in and the outputs in numpy
out: the char-id mapping is inside the timing for all. All are called in
turn, `--calls` times each after `--warmup` calls. Prints p50 / p90 / p99
in ms and the SavedModel's p50 over each portable runtime's (float32 and
int8 apart, at its fastest thread count); `--json` also writes them with
provenance. Each call's process CPU time (`time.process_time`, all
threads: TensorFlow's pools, a runtime's workers and their spinning) is
recorded too: on a machine other jobs load, wall time measures the
queue for the cores as much as the call, CPU time the work.
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


def percentiles(values):
    return {
        "p50": round(percentile(values, 50), 3),
        "p90": round(percentile(values, 90), 3),
        "p99": round(percentile(values, 99), 3),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="elmo_small_en")
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--portable-threads",
        default="1,2",
        help="comma-separated intra-op thread counts for the portable files",
    )
    parser.add_argument(
        "--int8", action="store_true", help="also time int8 exports"
    )
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
            for quantize in (None, "int8") if args.int8 else (None,):
                name = fmt + ("_int8" if quantize else "")
                paths[name] = keras_elmo.export_portable(
                    bilm,
                    os.path.join(tmp, name + suffix),
                    format=fmt,
                    quantize=quantize,
                )
        signature = tf.saved_model.load(saved).signatures["tokens"]

        def call_saved_model(tokens):
            out = signature(
                tokens=tf.constant([tokens]),
                sequence_len=tf.constant([len(tokens)], tf.int32),
            )
            return out["elmo"].numpy()

        calls = {"savedmodel": call_saved_model}
        portable_threads = [int(n) for n in args.portable_threads.split(",")]
        for name, path in paths.items():
            for threads in portable_threads:
                reader = portable_runtime.PortableElmo(
                    path, num_threads=threads
                )
                calls[f"{name}@{threads}"] = lambda tokens, r=reader: r(
                    [tokens]
                )["elmo"]

        # They agree on a sentence (a broken export is not timed): float32
        # within 1e-5 of the largest activation, int8 within the bound
        # tests/export/portable_test.py holds (INT8_TOLERANCE).
        probe = sentence()
        reference = calls["savedmodel"](probe)
        scale = float(np.abs(reference).max())
        deviation = {}
        for name in paths:
            deviation[name] = float(
                np.abs(
                    calls[f"{name}@{portable_threads[0]}"](probe) - reference
                ).max()
            )
            bound = 0.075 if name.endswith("int8") else 1e-5
            assert deviation[name] <= bound * scale, (name, deviation[name])

        for fn in calls.values():
            for _ in range(args.warmup):
                fn(sentence())
        times = {name: [] for name in calls}
        cpu = {name: [] for name in calls}
        start_load = os.getloadavg()[0]
        for _ in range(args.calls):
            for name, fn in calls.items():
                tokens = sentence()
                start, start_cpu = time.perf_counter(), time.process_time()
                out = fn(tokens)
                times[name].append((time.perf_counter() - start) * 1e3)
                cpu[name].append((time.process_time() - start_cpu) * 1e3)
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
            f"  {name:>15}: p50 {p50[name]:6.2f} ms  "
            f"p90 {percentile(values, 90):6.2f} ms  "
            f"p99 {percentile(values, 99):6.2f} ms  "
            f"CPU p50 {percentile(cpu[name], 50):6.2f} ms"
        )
    # Each portable file at its fastest thread count in this run.
    best = {
        name: min((p50[f"{name}@{t}"], t) for t in portable_threads)
        for name in paths
    }
    speedup = {name: p50["savedmodel"] / best[name][0] for name in paths}
    for name, ratio in speedup.items():
        print(
            f"  savedmodel p50 / {name} p50: {ratio:.2f}x "
            f"({name} at {best[name][1]} threads)"
        )
    cpu_p50 = {name: percentile(values, 50) for name, values in cpu.items()}
    cpu_best = {
        name: min((cpu_p50[f"{name}@{t}"], t) for t in portable_threads)
        for name in paths
    }
    cpu_speedup = {
        name: cpu_p50["savedmodel"] / cpu_best[name][0] for name in paths
    }
    for name, ratio in cpu_speedup.items():
        print(
            f"  savedmodel CPU p50 / {name} CPU p50: {ratio:.2f}x "
            f"({name} at {cpu_best[name][1]} threads)"
        )
    at_best = {"savedmodel": times["savedmodel"]}
    at_best.update(
        {name: times[f"{name}@{t}"] for name, (_, t) in best.items()}
    )
    if args.json:
        import provenance

        provenance.write_json(
            args.json,
            {
                "provenance": provenance.provenance(
                    modules=[
                        "keras_elmo/export/portable.py",
                        "keras_elmo/export/portable_runtime.py",
                    ]
                ),
                "model": args.preset,
                "tokens": args.tokens,
                "calls": args.calls,
                "threads": args.threads,
                "portable_threads": portable_threads,
                "load": [round(start_load, 2), round(end_load, 2)],
                "elmo_deviation_over_max": {
                    name: value / scale for name, value in deviation.items()
                },
                # Each at its best thread count; every count below.
                "ms": {name: percentiles(v) for name, v in at_best.items()},
                "ms_by_threads": {
                    name: percentiles(v)
                    for name, v in times.items()
                    if name != "savedmodel"
                },
                "best_threads": {name: t for name, (_, t) in best.items()},
                "savedmodel_p50_over": {
                    name: round(ratio, 3) for name, ratio in speedup.items()
                },
                # Process CPU time per call, every runtime and thread count.
                "cpu_ms": {name: percentiles(v) for name, v in cpu.items()},
                "cpu_best_threads": {
                    name: t for name, (_, t) in cpu_best.items()
                },
                "savedmodel_cpu_p50_over": {
                    name: round(ratio, 3) for name, ratio in cpu_speedup.items()
                },
            },
        )


if __name__ == "__main__":
    main()
