"""The `--text` rounds of `benchmarks/allennlp_side_by_side.py`.

Each round: `allennlp_text_bench.py` in the reference venv, then
`text_inference.py` here, each a fresh process on the same weights and
the same batches (`real_text.py`), with the 1-minute load average before,
between and after. tokens/s of a pass = the workload's real tokens / the
pass's seconds. For each pairing (keras_elmo variant, AllenNLP variant)
and workload: the ratio of the median tokens/s over all passes of all
rounds, and the min-max of the per-round ratios (each round's median over
the other's), so a load swing between rounds shows as a range instead
of hiding in one figure.
"""

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import provenance  # noqa: E402

# (keras_elmo variant, AllenNLP variant): what each ratio compares.
PAIRS = (
    ("fp32", "plain"),
    ("fp32-padded", "plain"),
    ("bf16", "plain"),
    ("cache", "cache"),
    ("bf16+cache", "cache"),
)


def _results(stdout):
    import json

    return [
        json.loads(line[len("RESULT ") :])
        for line in stdout.splitlines()
        if line.startswith("RESULT ")
    ]


def _run(command, env=None):
    done = subprocess.run(
        command, check=True, capture_output=True, text=True, env=env
    )
    return _results(done.stdout)


def run_round(args, weights_dir):
    """One AllenNLP process then one keras_elmo process: their results
    and the load average before, between and after."""
    common = [
        "--text",
        args.text,
        "--lines",
        str(args.lines),
        "--workloads",
        args.workloads,
        "--runs",
        str(args.runs),
        "--options",
        os.path.join(weights_dir, "original_options.json"),
        "--weights",
        os.path.join(weights_dir, "original_weights.hdf5"),
    ]
    load = [os.getloadavg()[0]]
    allen = _run(
        [args.ref_python, os.path.join(HERE, "allennlp_text_bench.py")]
        + common
        + ["--variants", args.allennlp_variants]
    )
    load.append(os.getloadavg()[0])
    ours = _run(
        [sys.executable, os.path.join(HERE, "text_inference.py")]
        + common
        + ["--variants", args.text_variants],
        env=dict(os.environ, PYTHONPATH=REPO),
    )
    load.append(os.getloadavg()[0])
    return {"load_1min": [round(x, 2) for x in load], "results": allen + ours}


def tokens_per_s(result):
    return [result["tokens"] / s for s in result["seconds"]]


def summarize(rounds):
    """`{workload: {"keras_elmo/<v> vs allennlp/<w>": {...}, ...}}`."""
    passes, per_round, shapes = {}, [], {}
    for round_ in rounds:
        medians = {}
        for r in round_["results"]:
            key = (r["workload"], r["side"], r["variant"])
            passes.setdefault(key, []).extend(tokens_per_s(r))
            medians[key] = statistics.median(tokens_per_s(r))
            shapes[r["workload"]] = {
                k: r[k]
                for k in ("batches", "sentences", "tokens", "real_fraction")
            }
        per_round.append(medians)
    summary = {}
    for workload, shape in shapes.items():
        entry = {"workload": shape, "tokens_per_s_median": {}, "ratios": {}}
        for (w, side, variant), speeds in sorted(passes.items()):
            if w == workload:
                entry["tokens_per_s_median"][f"{side}/{variant}"] = round(
                    statistics.median(speeds), 1
                )
        for ours, theirs in PAIRS:
            a = (workload, "keras_elmo", ours)
            b = (workload, "allennlp", theirs)
            if a not in passes or b not in passes:
                continue
            rounds_ratio = [m[a] / m[b] for m in per_round if a in m and b in m]
            entry["ratios"][f"keras_elmo/{ours} vs allennlp/{theirs}"] = {
                "ratio_of_medians": round(
                    statistics.median(passes[a]) / statistics.median(passes[b]),
                    3,
                ),
                "per_round_min": round(min(rounds_ratio), 3),
                "per_round_max": round(max(rounds_ratio), 3),
            }
        summary[workload] = entry
    return summary


def run(args, weights_dir):
    rounds = []
    for index in range(args.rounds):
        rounds.append(run_round(args, weights_dir))
        print(f"round {index + 1}: load {rounds[-1]['load_1min']}", flush=True)
        summary = summarize(rounds)
        for workload, entry in summary.items():
            for name, ratio in entry["ratios"].items():
                print(
                    f"    {workload:>8} {name:>40}: "
                    f"{ratio['ratio_of_medians']:.2f}x "
                    f"({ratio['per_round_min']:.2f}-"
                    f"{ratio['per_round_max']:.2f})",
                    flush=True,
                )
        provenance.write_json(
            args.out,
            {
                # Its own earlier rounds' file is not a change to the tree.
                "provenance": provenance.provenance(written=[args.out]),
                "what": (
                    "tokens/s of AllenNLP 2.10.1 _ElmoBiLm and keras_elmo "
                    "BiLM on the same `original` weights and batches, "
                    "alternating processes, 2 threads each; ratio = median "
                    "keras_elmo tokens/s over all passes / median AllenNLP "
                    "tokens/s, range = min-max of per-round ratios"
                ),
                "text": args.text,
                "lines": args.lines,
                "rounds_done": index + 1,
                "runs_per_round": args.runs,
                "summary": summary,
                "rounds": rounds,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit("Run benchmarks/allennlp_side_by_side.py --text FILE.")
