"""keras_elmo vs AllenNLP on the same weights and workload, alternately.

    python benchmarks/allennlp_side_by_side.py [--rounds 2] [--runs 3]
        [--ref-dir tools/allennlp_ref]
        [--ref-python /tmp/elmo_ref/venv/bin/python]
        [--variants fp32,fp32-every-token,bf16,cache,bf16+cache]

Each round runs, one after the other in fresh processes,
`tools/allennlp_ref/bench_allennlp.py` (AllenNLP's `_ElmoBiLm`, `original`
weights from the harness's `make_weights.py`, 64 sentences x 20 tokens,
2 threads) and `benchmarks/inference.py` on the SAME weight file and the
same sentences, then prints the tokens/s of each and their ratios with the
load average before and after, so a ratio is measured within minutes on
the same machine. Needs the AllenNLP venv (`tools/allennlp_ref/setup_ref.sh`).

    python benchmarks/allennlp_side_by_side.py --text FILE [--lines 128]
        [--rounds 3] [--runs 2] [--workloads file,sorted,uniform]
        [--text-variants fp32,fp32-padded,bf16,cache]
        [--allennlp-variants plain,cache]
        [--out benchmarks/results/allennlp_side_by_side.json]

With `--text`, each round runs `benchmarks/allennlp_text_bench.py`
(AllenNLP, plain and `vocab_to_cache`) and then
`benchmarks/text_inference.py` (keras_elmo) on the workloads of
`benchmarks/real_text.py`: the file's sentences at their natural lengths
in file order, the same sorted by length, and the uniform 64 x 20 batch.
`benchmarks/text_side_by_side.py` turns the passes into tokens/s and the
ratio of medians (all passes of all rounds) with the min-max of the
per-round ratios, written with provenance to `--out`.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WEIGHTS_DIR = "/tmp/elmo_ref/w"


def ensure_weights(weights_dir=WEIGHTS_DIR, name="original"):
    """Writes the seeded `name` weights both sides read into `weights_dir`
    when they are missing, with the fixtures' generator
    (`tests/fixtures/make_weights.py`, numpy + h5py)."""
    stem = os.path.join(weights_dir, name)
    if not os.path.exists(f"{stem}_weights.hdf5"):
        subprocess.run(
            [
                sys.executable,
                os.path.join(REPO, "tests", "fixtures", "make_weights.py"),
                name,
                "--out-dir",
                weights_dir,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return f"{stem}_options.json", f"{stem}_weights.hdf5"


def run_allennlp(args):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                args.ref_python,
                os.path.join(args.ref_dir, "bench_allennlp.py"),
                "--repeats",
                str(args.runs),
                "--json",
                out.name,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with open(out.name) as f:
            return json.load(f)["tokens_per_s_median"]


def run_ours(args):
    env = dict(os.environ, PYTHONPATH=REPO)
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "inference.py"),
            "--options",
            os.path.join(WEIGHTS_DIR, "original_options.json"),
            "--weights",
            os.path.join(WEIGHTS_DIR, "original_weights.hdf5"),
            "--batches",
            "64x20",
            "--runs",
            str(args.runs),
            "--variants",
            args.variants,
        ]
        + (["--jit"] if args.jit else []),
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    speeds, lines = {}, []
    for line in result.stdout.splitlines():
        match = re.search(r"64x20\s+(\S+)\s+([\d.]+) tokens/s", line)
        if match:
            speeds[match.group(1)] = float(match.group(2))
        if match or line.startswith("matmul"):
            lines.append(line)
    return speeds, lines


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--ref-dir", default=os.path.join(REPO, "tools", "allennlp_ref")
    )
    parser.add_argument("--ref-python", default="/tmp/elmo_ref/venv/bin/python")
    parser.add_argument(
        "--variants", default="fp32,fp32-every-token,bf16,cache,bf16+cache"
    )
    parser.add_argument("--jit", action="store_true")
    parser.add_argument("--text", help="real sentences, one a line")
    parser.add_argument("--lines", type=int, default=128)
    parser.add_argument("--workloads", default="file,sorted,uniform")
    parser.add_argument(
        "--text-variants", default="fp32,fp32-padded,bf16,cache"
    )
    parser.add_argument("--allennlp-variants", default="plain,cache")
    parser.add_argument(
        "--out",
        default=os.path.join(HERE, "results", "allennlp_side_by_side.json"),
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    ensure_weights()
    if args.text:
        sys.path.insert(0, HERE)
        import text_side_by_side

        return text_side_by_side.run(args, WEIGHTS_DIR)

    for round_ in range(args.rounds):
        before = os.getloadavg()[0]
        allen = run_allennlp(args)
        middle = os.getloadavg()[0]
        ours, lines = run_ours(args)
        after = os.getloadavg()[0]
        print(
            f"round {round_ + 1}: load {before:.1f} / {middle:.1f} / "
            f"{after:.1f}; AllenNLP {allen:.1f} tokens/s"
        )
        for line in lines:
            print("   ", line.strip())
        for name, speed in ours.items():
            print(
                f"    keras_elmo {name:>10}: {speed:8.1f} tokens/s = "
                f"{speed / allen:5.2f} x AllenNLP"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
