"""Peak memory of `keras-elmo embed` versus input size: it should be flat.

    python benchmarks/embed_memory.py [--lines 10000 100000] [--layers top]

For each size, writes that many lines of random words (seeded), runs
`keras-elmo embed INPUT OUT.hdf5 --top --preset tiny` (random weights) in
a subprocess, and samples the child's memory from
/proc/PID/status (VmRSS every 50 ms, and VmHWM, the kernel's own peak) until
it exits. Prints one row per size: lines, seconds, lines/s, peak RSS (MiB),
output size (MiB). Linux only (reads /proc); no psutil needed.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_lines(path, count, seed=0, min_words=3, max_words=25):
    """`count` lines of random lowercase words, 3..25 words each."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocabulary = [
        "".join(rng.choice(letters, size=int(rng.integers(1, 11))))
        for _ in range(5000)
    ]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(count):
            n = int(rng.integers(min_words, max_words + 1))
            words = rng.integers(0, len(vocabulary), size=n)
            f.write(" ".join(vocabulary[w] for w in words) + "\n")


def read_status(pid):
    """`{"VmRSS": kB, "VmHWM": kB}` of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return {
        key: int(fields[key].split()[0])
        for key in ("VmRSS", "VmHWM")
        if key in fields
    }


def run_embed(input_path, output_path, layers, batch_size):
    """Runs `keras-elmo embed`; returns (seconds, peak RSS in kB)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, "-m", "keras_elmo.cli.main", "embed"]
    command += [input_path, output_path, f"--{layers}", "--force"]
    command += ["--batch-size", str(batch_size), "--preset", "tiny"]
    start = time.perf_counter()
    child = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    # Drain stderr (the progress bar) on a thread so the pipe never fills.
    errors = []
    reader = threading.Thread(
        target=lambda: errors.append(child.stderr.read()), daemon=True
    )
    reader.start()
    while child.poll() is None:
        status = read_status(child.pid)
        if status:
            peak = max(peak, status.get("VmHWM", 0), status.get("VmRSS", 0))
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    reader.join()
    if child.returncode != 0:
        raise RuntimeError(
            f"embed failed ({child.returncode}):\n{''.join(errors)[-3000:]}"
        )
    return seconds, peak


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--lines", type=int, nargs="+", default=[10_000, 100_000]
    )
    parser.add_argument(
        "--layers", choices=["all", "top", "average"], default="top"
    )
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args(argv)
    print(
        f"keras-elmo embed --{args.layers} --batch-size {args.batch_size}, "
        "random tiny preset; memory sampled from /proc/PID/status"
    )
    print(
        f"{'lines':>8} {'seconds':>8} {'lines/s':>8} {'peak RSS MiB':>13} "
        f"{'output MiB':>11}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.lines:
            input_path = os.path.join(tmp, f"in_{count}.txt")
            output_path = os.path.join(tmp, f"out_{count}.hdf5")
            write_lines(input_path, count)
            seconds, peak = run_embed(
                input_path, output_path, args.layers, args.batch_size
            )
            size = os.path.getsize(output_path) / 2**20
            print(
                f"{count:>8} {seconds:>8.1f} {count / seconds:>8.0f} "
                f"{peak / 1024:>13.1f} {size:>11.1f}",
                flush=True,
            )
            os.remove(output_path)


if __name__ == "__main__":
    main()
