"""The generated blocks of examples/RESULTS.md, drawn from results files.

Each entry of `BLOCKS` returns the Markdown lines between
`<!-- generated: NAME -->` and `<!-- end generated -->`;
`tools/render_results.py` writes them in. Differences and means that the
prose discusses are computed here, so no figure is typed by hand.
"""

import json
import os
import statistics

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(relative):
    with open(os.path.join(REPO, relative), encoding="utf-8") as f:
        return json.load(f)


POS_RESULTS = "examples/figures/pos_results.json"
PROBE_RESULTS = "examples/results/layer_probe.json"


def percent(x):
    return f"{100 * x:.2f}"


def _fractions():
    payload = load(POS_RESULTS)
    return sorted(payload["fractions"].items(), key=lambda kv: float(kv[0]))


def pos_summary():
    rows = [
        "| training sentences | baseline (%) | + ELMo (%) | "
        "relative error reduction |",
        "| --- | --- | --- | --- |",
    ]
    for fraction, block in _fractions():
        summary = block["summary"]
        rows.append(
            f"| {float(fraction):.0%} ({block['runs'][0]['sentences']:,}) "
            f"| {percent(summary['baseline']['mean'])} ± "
            f"{percent(summary['baseline']['std'])} "
            f"| {percent(summary['elmo']['mean'])} ± "
            f"{percent(summary['elmo']['std'])} "
            f"| **{summary['relative_error_reduction']:.1%}** |"
        )
    return rows


def pos_runs():
    rows = [
        "| fraction | seed | steps | baseline dev | baseline test | "
        "ELMo dev | ELMo test | baseline s | ELMo s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for fraction, block in _fractions():
        for seed, run in enumerate(block["runs"]):
            base, elmo = run["baseline"], run["elmo"]
            rows.append(
                f"| {float(fraction):.0%} | {seed} | {run['steps']} "
                f"| {percent(base['dev'])} | {percent(base['test'])} "
                f"| {percent(elmo['dev'])} | {percent(elmo['test'])} "
                f"| {base['seconds']:.0f} | {elmo['seconds']:.0f} |"
            )
    return rows


def mix_weights():
    """`softmax(s)` mean ± std over seeds as pos_tagging.py summarises it,
    and the mean `gamma`."""
    layers = None
    rows = []
    for fraction, block in _fractions():
        summary = block["summary"]
        means, stds = summary["mix_weights_mean"], summary["mix_weights_std"]
        layers = len(means)
        cells = [f"{m:.3f} ± {d:.3f}" for m, d in zip(means, stds)]
        gamma = statistics.mean(run["elmo"]["gamma"] for run in block["runs"])
        rows.append(
            f"| {float(fraction):.0%} | {' | '.join(cells)} | {gamma:.2f} |"
        )
    names = ["token layer (0)"] + [f"biLSTM {j}" for j in range(1, layers)]
    header = [
        f"| training sentences | {' | '.join(names)} | `gamma` |",
        "| --- |" + " --- |" * (layers + 1),
    ]
    return header + rows


def layer_probe():
    payload = load(PROBE_RESULTS)
    best = str(payload["best_layer_on_dev"])
    rows = ["| layer | dev (%) | test (%) |", "| --- | --- | --- |"]
    for j, result in sorted(
        payload["layers"].items(), key=lambda kv: int(kv[0])
    ):
        mark = "**" if j == best else ""
        rows.append(
            f"| {j}: {result['name']} | {mark}{percent(result['dev'])}{mark} "
            f"| {percent(result['test'])} |"
        )
    return rows


# ---- the paper tables (examples/paper_tables.py) -------------------------

TABLE_FILES = {
    "table1": "examples/results/table1.json",
    "table1_snli": "examples/results/table1_snli.json",
    "table2": "examples/results/table2.json",
    "table3": "examples/results/table3.json",
}
VARIANT_NAMES = {
    "baseline": "GloVe + char-CNN",
    "cove": "+ CoVe",
    "elmo": "+ ELMo",
    "elmo_last_only": "last layer only",
    "elmo_l2_1": "all layers, lambda = 1",
    "elmo_l2_0.001": "all layers, lambda = 0.001",
    "elmo_input_output": "+ ELMo at input and output",
}
# (table, task, variant, the variant it is compared with), as the prose of
# examples/RESULTS.md discusses them.
COMPARISONS = (
    ("table1", "pos", "elmo", "baseline"),
    ("table1", "sentiment", "elmo", "baseline"),
    ("table1_snli", "snli", "elmo", "baseline"),
    ("table1", "pos", "cove", "baseline"),
    ("table1", "sentiment", "cove", "baseline"),
    ("table1_snli", "snli", "cove", "baseline"),
    ("table2", "pos", "elmo_l2_0.001", "elmo_last_only"),
    ("table2", "sentiment", "elmo_l2_0.001", "elmo_last_only"),
    ("table2", "pos", "elmo_l2_0.001", "elmo_l2_1"),
    ("table2", "sentiment", "elmo_l2_0.001", "elmo_l2_1"),
    ("table3", "sentiment", "elmo_input_output", "elmo"),
    ("table3", "snli", "elmo_input_output", "elmo"),
)


def _runs(table, task, variant):
    runs = load(TABLE_FILES[table])["tasks"][task]["variants"][variant]
    return {run["seed"]: run for run in runs["runs"]}


def _points(x):
    return f"{100 * x:+.2f}"


def paper_differences():
    """Test and dev accuracy differences, paired by seed (same data, same
    seed: only the features differ), in percentage points."""
    rows = [
        "| results file | task | variant | minus | test: mean "
        "(per seed) | dev: mean |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for table, task, variant, other in COMPARISONS:
        a, b = _runs(table, task, variant), _runs(table, task, other)
        seeds = sorted(set(a) & set(b))
        test = [a[s]["test"] - b[s]["test"] for s in seeds]
        dev = [a[s]["dev"] - b[s]["dev"] for s in seeds]
        rows.append(
            f"| `{table}.json` | {task} | {VARIANT_NAMES[variant]} "
            f"| {VARIANT_NAMES[other]} | {_points(statistics.mean(test))} "
            f"({', '.join(_points(d) for d in test)}) "
            f"| {_points(statistics.mean(dev))} |"
        )
    return rows


def paper_mix_weights():
    """Mean learned `softmax(s)` and `gamma` over seeds, for every trained
    mix of every table (a mix pinned by `scalar_mix_parameters` is not
    trained and is left out)."""
    rows = [
        "| results file | task | variant | mix | token layer (0) "
        "| biLSTM 1 | biLSTM 2 | `gamma` |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for table, path in TABLE_FILES.items():
        for task, block in load(path)["tasks"].items():
            for variant, result in block["variants"].items():
                runs = result["runs"]
                mix = 0
                while f"mix_weights_{mix}" in runs[0]:
                    weights = [run[f"mix_weights_{mix}"] for run in runs]
                    if max(max(w) for w in weights) < 1.0:
                        means = [statistics.mean(c) for c in zip(*weights)]
                        gamma = statistics.mean(
                            run[f"gamma_{mix}"] for run in runs
                        )
                        cells = " | ".join(f"{m:.3f}" for m in means)
                        rows.append(
                            f"| `{table}.json` | {task} "
                            f"| {VARIANT_NAMES[variant]} | {mix} | {cells} "
                            f"| {gamma:.2f} |"
                        )
                    mix += 1
    return rows


BLOCKS = {
    "pos_summary": pos_summary,
    "pos_runs": pos_runs,
    "mix_weights": mix_weights,
    "layer_probe": layer_probe,
    "paper_differences": paper_differences,
    "paper_mix_weights": paper_mix_weights,
}
