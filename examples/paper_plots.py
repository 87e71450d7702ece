"""Bar chart of a `paper_tables.py` results file (paper Table 2 reads
best as one): test accuracy per task and variant, mean over seeds with
the sample standard deviation as error bars, the seeds as dots.

    python examples/paper_plots.py examples/results/table2.json \\
        examples/figures/table2.png
"""

import json
import sys

import numpy as np


def bar_chart(results, path):
    """Draws `results` (a `paper_tables.main` dict) to a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from paper_tables import LABELS

    tasks = list(results["tasks"])
    variants = results["variants"]
    width = 0.8 / len(variants)
    figure, axes = plt.subplots(1, len(tasks), figsize=(4 * len(tasks), 3.6))
    axes = np.atleast_1d(axes)
    for axis, task in zip(axes, tasks):
        entry = results["tasks"][task]["variants"]
        for k, variant in enumerate(variants):
            tests = 100 * np.array([r["test"] for r in entry[variant]["runs"]])
            axis.bar(
                k * width,
                tests.mean(),
                width * 0.9,
                yerr=tests.std(ddof=1) if len(tests) > 1 else 0.0,
                capsize=3,
                label=LABELS[variant],
            )
            axis.plot(np.full(len(tests), k * width), tests, "k.", ms=3)
        means = [100 * entry[v]["mean"] for v in variants]
        axis.set_ylim(min(means) - 3, max(means) + 2)
        axis.set_xticks([])
        axis.set_title(task)
        axis.set_ylabel("test accuracy (%)")
    axes[0].legend(fontsize=7, loc="lower left")
    figure.suptitle(
        f"{results['table']}: {results['model']}, {results['seeds']} seeds",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.exit("usage: paper_plots.py RESULTS.json OUT.png")
    with open(argv[0], encoding="utf-8") as f:
        print(bar_chart(json.load(f), argv[1]))


if __name__ == "__main__":
    main()
