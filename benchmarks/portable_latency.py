"""One-sentence latency: ONNX Runtime vs LiteRT vs the SavedModel, one run.

    python benchmarks/portable_latency.py [--preset elmo_small_en]
        [--tokens 20] [--calls 300] [--warmup 20] [--rounds 10]
        [--threads 2] [--portable-threads 1,2] [--int8]
        [--json benchmarks/results/portable_latency.json]

Exports `BiLM.from_preset(--preset)` into a temporary folder:
`keras_elmo.export_saved_model` and `keras_elmo.export_portable` as ONNX
and LiteRT (float32, and with `--int8` also `quantize="int8"`). Each is
then served by a process of its own, as it would be deployed
(`simple_elmo_worker.py`): the SavedModel loaded with
`tf.saved_model.load` and called through its `tokens` signature on
`--threads` TensorFlow threads; each portable file, once per thread count
of `--portable-threads`, read by `keras_elmo/export/portable_runtime.py`
(`PortableElmo`: char ids in numpy, then onnxruntime or ai-edge-litert)
in a process that never imports TensorFlow. In one process, TensorFlow's
thread pools, still spinning after a SavedModel call, take the cores
from the next runtime's call.

Each call embeds one sentence of `--tokens` words, a different one each
call (drawn, seeded, from `real_text.WORDS`, the word list of every
inference benchmark here), string tokens in and the `elmo` output in
numpy out: the char-id mapping is inside the timing for all. Every
process embeds the same sentences. The processes take turns: `--rounds`
rounds, in each of which every process, one at a time (the others wait
on their input), times its share of the `--calls` calls, in an order that
rotates each round, after `--warmup` untimed calls each; so a change in
the machine's load falls on all of them alike. Prints p50 / p90 / p99 in
ms and the SavedModel's p50 over each portable runtime's (float32 and
int8 apart, at its fastest thread count); `--json` also writes them with
provenance. Each call's process CPU time (`time.process_time` in the
serving process, all its threads: TensorFlow's pools, a runtime's
workers and their spinning) is recorded too: on a machine other jobs
load, wall time measures the queue for the cores as much as the call, CPU
time the work.
"""

import argparse
import json
import os
import random
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from real_text import WORDS  # noqa: E402  (bench_allennlp.py's word list)
from saved_model_latency import percentile  # noqa: E402
from simple_elmo_side_by_side import Worker  # noqa: E402


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
    parser.add_argument(
        "--rounds",
        type=int,
        default=10,
        help="turns each serving process takes (calls split among them)",
    )
    parser.add_argument(
        "--threads", type=int, default=2, help="the SavedModel's threads"
    )
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

    import keras_elmo

    rng = random.Random(0)
    sentences = [
        [rng.choice(WORDS) for _ in range(args.tokens)]
        for _ in range(args.warmup + args.calls)
    ]
    rounds = max(1, min(args.rounds, args.calls))
    shares = [
        len(range(r, args.calls, rounds)) for r in range(rounds)
    ]  # calls per round, in order
    portable_threads = [int(n) for n in args.portable_threads.split(",")]

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
        del bilm
        listed = os.path.join(tmp, "sentences.json")
        with open(listed, "w", encoding="utf-8") as f:
            json.dump(sentences, f)

        script = os.path.join(HERE, "simple_elmo_worker.py")
        env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")

        def start(mode, path, threads):
            command = [sys.executable, script, "--mode", mode]
            command += ["--file", path, "--sentences", listed]
            command += ["--threads", str(threads)]
            return command

        workers = {
            "savedmodel": Worker(
                "savedmodel", start("savedmodel", saved, args.threads), env
            )
        }
        for name, path in paths.items():
            for threads in portable_threads:
                key = f"{name}@{threads}"
                workers[key] = Worker(
                    key, start("portable", path, threads), env
                )
        try:
            # They agree on a sentence (a broken export is not timed):
            # float32 within 1e-5 of the largest activation, int8 within
            # the bound tests/export/portable_test.py holds.
            elmo = {}
            for key, worker in workers.items():
                out = os.path.join(tmp, key + ".npy")
                worker.ask(f"elmo {out} 0")
                elmo[key] = np.load(out)
            reference = elmo["savedmodel"]
            scale = float(np.abs(reference).max())
            deviation = {}
            for name in paths:
                key = f"{name}@{portable_threads[0]}"
                deviation[name] = float(np.abs(elmo[key] - reference).max())
                bound = 0.075 if name.endswith("int8") else 1e-5
                assert deviation[name] <= bound * scale, (name, deviation)

            for worker in workers.values():
                worker.ask(f"latency 0 {args.warmup}")
            times = {name: [] for name in workers}
            cpu = {name: [] for name in workers}
            order = list(workers)
            start_load = os.getloadavg()[0]
            first = args.warmup
            for turn, share in enumerate(shares):
                turn_order = order[turn % len(order) :]
                turn_order += order[: turn % len(order)]
                for name in turn_order:
                    answer = workers[name].ask(f"latency {first} {share}")
                    times[name] += answer["ms"]
                    cpu[name] += answer["cpu_ms"]
                first += share
            rss = {name: w.quit()["peak_rss_mb"] for name, w in workers.items()}
        finally:
            for worker in workers.values():
                if worker.process.poll() is None:
                    worker.process.kill()
                    worker.process.wait()
    end_load = os.getloadavg()[0]
    p50 = {name: percentile(values, 50) for name, values in times.items()}
    print(
        f"{args.preset}: one sentence of {args.tokens} tokens, {args.calls} "
        f"calls each after {args.warmup} warm-up, in {rounds} rounds, one "
        f"process each, SavedModel threads={args.threads}, "
        f"load {start_load:.1f} -> {end_load:.1f}"
    )
    for name, values in times.items():
        print(
            f"  {name:>15}: p50 {p50[name]:6.2f} ms  "
            f"p90 {percentile(values, 90):6.2f} ms  "
            f"p99 {percentile(values, 99):6.2f} ms  "
            f"CPU p50 {percentile(cpu[name], 50):6.2f} ms  "
            f"peak RSS {rss[name]:6.0f} MB"
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
                "rounds": rounds,
                "protocol": "one serving process per runtime and thread "
                "count, taking turns",
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
                # Each serving process's peak resident memory.
                "peak_rss_mb": {name: round(v, 1) for name, v in rss.items()},
            },
        )


if __name__ == "__main__":
    main()
