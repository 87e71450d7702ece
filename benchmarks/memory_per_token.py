"""Peak memory per token of a `keras_elmo.BiLM` forward pass, per preset.

    python benchmarks/memory_per_token.py [--presets tiny small medium
        original] [--steps 16 64] [--batch-size 64] [--worst-case]

For each preset and each sentence length `T`, a fresh Python process builds
the preset with random weights, warms it up on a `[1, 2]` batch, resets
the kernel's peak-RSS counter (`/proc/self/clear_refs`, else it keeps the
startup peak), runs one inference call `bilm(char_ids, training=False)` on
`[batch, T]` tokens drawn from 500 random words of 1-11 letters (with
`--worst-case`: every token distinct and 48 bytes long, so the biLM can
neither de-duplicate tokens nor skip char-CNN windows), and reports the
peak RSS increase over the RSS just before the call. Per token =
increase / (batch * T); the marginal figure is the slope between the two
lengths,
`(inc(T2) - inc(T1)) / (batch * (T2 - T1))`, which discounts per-call
constants. Linux only (reads /proc).
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _reset_peak():
    """Resets VmHWM to the current RSS; False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child(preset, steps, batch_size, worst_case=False):
    """Runs one measurement in this process; prints one JSON line."""
    import numpy as np

    import keras_elmo

    config = keras_elmo.BiLMConfig.from_architecture(preset)
    bilm = keras_elmo.BiLM(config)
    bilm(keras_elmo.batch_to_ids([["warm", "up"]]), training=False)
    rng = np.random.default_rng(0)
    if worst_case:
        # Every token distinct and 48 bytes long: nothing to de-duplicate,
        # no char-CNN window to skip.
        sentences = [
            [
                "".join(rng.choice(list("abcdefghij"), size=48))
                for _ in range(steps)
            ]
            for _ in range(batch_size)
        ]
    else:
        words = [
            "".join(rng.choice(list("abcdefghij"), size=int(n)))
            for n in rng.integers(1, 12, size=500)
        ]
        sentences = [
            [words[i] for i in rng.integers(0, len(words), size=steps)]
            for _ in range(batch_size)
        ]
    ids = keras_elmo.batch_to_ids(sentences)
    reset = _reset_peak()
    before = _status_kb("VmRSS")
    start = time.perf_counter()
    out = bilm(ids, training=False)
    top = np.asarray(out[f"lstm_outputs{config.num_layers}"])
    seconds = time.perf_counter() - start
    peak = _status_kb("VmHWM")
    assert np.isfinite(top).all()
    print(
        json.dumps(
            {
                "preset": preset,
                "steps": steps,
                "batch_size": batch_size,
                "rss_before_kb": before,
                "peak_kb": peak,
                "peak_reset": reset,
                "seconds": seconds,
            }
        )
    )


def measure(preset, steps, batch_size, worst_case=False):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, os.path.abspath(__file__), "--child"]
    command += [preset, str(steps), str(batch_size), str(int(worst_case))]
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"{preset} T={steps} failed (exit {done.returncode}):\n"
            + done.stderr[-2000:]
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--presets", nargs="+", default=["tiny", "small", "medium", "original"]
    )
    parser.add_argument("--steps", nargs=2, type=int, default=[16, 64])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--worst-case",
        action="store_true",
        help="Every token distinct and 48 bytes long.",
    )
    parser.add_argument(
        "--results",
        help="Also write the rows, with provenance, to this JSON file "
        "(e.g. benchmarks/results/memory_per_token.json).",
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        preset, steps, batch_size, worst_case = args.child
        child(preset, int(steps), int(batch_size), worst_case == "1")
        return 0
    print(
        f"BiLM inference, random weights, batch {args.batch_size}, "
        + (
            "every token distinct and 48 bytes; "
            if args.worst_case
            else "tokens from 500 words of 1-11 letters; "
        )
        + "peak RSS increase over the RSS before the call (fresh process "
        "per row)"
    )
    header = (
        "| preset | T | tokens | RSS before (MiB) | peak increase (MiB) "
        "| bytes/token | marginal bytes/token | seconds |"
    )
    print(header)
    print("|" + " --- |" * 8)
    table = []
    for preset in args.presets:
        rows = [
            measure(preset, t, args.batch_size, args.worst_case)
            for t in args.steps
        ]
        increases = [1024 * (r["peak_kb"] - r["rss_before_kb"]) for r in rows]
        tokens = [args.batch_size * r["steps"] for r in rows]
        marginal = (increases[1] - increases[0]) / (tokens[1] - tokens[0])
        for row, increase, count in zip(rows, increases, tokens):
            print(
                f"| {preset} | {row['steps']} | {count} | "
                f"{row['rss_before_kb'] / 1024:.0f} | "
                f"{increase / 2**20:.1f} | {increase / count:,.0f} | "
                f"{marginal:,.0f} | {row['seconds']:.2f} |"
            )
        if not rows[0]["peak_reset"]:
            print(f"(peak counter could not be reset for {preset})")
        table.append(
            {
                "preset": preset,
                "rows": rows,
                "bytes_per_token": [i / n for i, n in zip(increases, tokens)],
                "marginal_bytes_per_token": marginal,
            }
        )
    if args.results:
        from provenance import provenance
        from provenance import write_json

        write_json(
            args.results,
            {
                "provenance": provenance(),
                "batch_size": args.batch_size,
                "worst_case": args.worst_case,
                "presets": table,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
