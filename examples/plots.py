"""PNG figures of the POS examples (matplotlib, Agg backend, lazy import).

matplotlib is only needed here, in the `examples`, `test` and `dev`
extras; the examples' other paths run without it.
"""

import os

from keras_elmo.utils.atomic import atomic_path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def _save(figure, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=80)
    return path


def sample_efficiency(results, path):
    """Test accuracy vs. training fraction, baseline and ELMo (paper Fig. 1).

    `results`: the dict `pos_tagging.main` returns (2+ fractions).
    """
    pyplot = _pyplot()
    fractions = sorted(results["fractions"], key=float)
    x = [100 * float(f) for f in fractions]
    figure, axis = pyplot.subplots(figsize=(5, 3.5))
    for kind, label in (("baseline", "baseline"), ("elmo", "+ ELMo")):
        summaries = [
            results["fractions"][f]["summary"][kind] for f in fractions
        ]
        axis.errorbar(
            x,
            [100 * s["mean"] for s in summaries],
            yerr=[100 * s["std"] for s in summaries],
            marker="o",
            capsize=3,
            label=label,
        )
    axis.set_xscale("log")
    axis.set_xlabel("% of training sentences")
    axis.set_ylabel("UPOS test accuracy (%)")
    axis.set_title(f"UD EWT POS, {results['model']}")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    _save(figure, path)
    pyplot.close(figure)
    return path


def scalar_mix_weights(results, path):
    """Bars of the learned `softmax(s)` per biLM layer (paper Fig. 2),
    one group per training fraction, mean +- std over seeds."""
    pyplot = _pyplot()
    fractions = sorted(results["fractions"], key=float)
    figure, axis = pyplot.subplots(figsize=(5, 3.5))
    width = 0.8 / len(fractions)
    for n, fraction in enumerate(fractions):
        summary = results["fractions"][fraction]["summary"]
        means = summary["mix_weights_mean"]
        positions = [
            layer + (n - (len(fractions) - 1) / 2) * width
            for layer in range(len(means))
        ]
        axis.bar(
            positions,
            means,
            width,
            yerr=summary["mix_weights_std"],
            capsize=2,
            label=f"{100 * float(fraction):g}% train",
        )
    layers = len(
        results["fractions"][fractions[0]]["summary"]["mix_weights_mean"]
    )
    axis.set_xticks(range(layers))
    axis.set_xticklabels(
        ["token (0)"] + [f"LSTM {k}" for k in range(1, layers)]
    )
    axis.axhline(1.0 / layers, color="gray", linestyle=":", linewidth=1)
    axis.set_ylabel("softmax(s)")
    axis.set_title(f"Learned ScalarMix weights, POS, {results['model']}")
    axis.legend()
    figure.tight_layout()
    _save(figure, path)
    pyplot.close(figure)
    return path


def main(argv=None):
    """Redraws both figures from a `pos_tagging.py --out-json` file."""
    import argparse
    import json

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("results", help="JSON written by pos_tagging.py")
    parser.add_argument(
        "--figures-dir",
        default=os.path.join(os.path.dirname(__file__), "figures"),
    )
    args = parser.parse_args(argv)
    with open(args.results) as f:
        results = json.load(f)
    paths = [
        scalar_mix_weights(
            results, os.path.join(args.figures_dir, "scalar_mix_weights.png")
        )
    ]
    if len(results["fractions"]) > 1:
        paths.append(
            sample_efficiency(
                results,
                os.path.join(args.figures_dir, "sample_efficiency.png"),
            )
        )
    for path in paths:
        print(f"wrote {path}")
    return paths


if __name__ == "__main__":
    main()
