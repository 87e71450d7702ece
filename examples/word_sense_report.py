"""The Markdown section of `examples/RESULTS.md` for
`word_sense_wordnet.py`, generated from its results JSON only.

    python examples/word_sense_report.py [RESULTS_JSON [RESULTS_MD]]

redraws the section from the JSON without rerunning the evaluation.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

BEGIN = "<!-- word_sense_wordnet: generated, do not edit -->"
END = "<!-- /word_sense_wordnet -->"

LABELS = {
    "layer_0": "biLM layer 0 (token layer, no context)",
    "layer_1": "biLM layer 1 (first biLSTM)",
    "layer_2": "biLM layer 2 (top biLSTM)",
    "average": "mean of layers 0-2",
    "most_frequent_sense": "most frequent sense in train (MFS)",
    "wordnet_first_sense": "WordNet's first sense among train senses",
    "cove_0": "CoVe's input (GloVe, no context)",
    "cove_1": "CoVe first biLSTM layer",
    "cove_2": "CoVe second biLSTM layer (CoVe)",
}


SHORT = {
    "layer_0": "layer 0",
    "layer_1": "layer 1",
    "layer_2": "layer 2",
    "average": "mean 0-2",
    "most_frequent_sense": "MFS",
    "wordnet_first_sense": "WordNet 1st",
    "cove_0": "CoVe 0",
    "cove_1": "CoVe 1",
    "cove_2": "CoVe 2",
}


def render_markdown(results):
    """The RESULTS.md section, from the results JSON only."""
    prov, data = results["provenance"], results["data"]
    lines = [
        BEGIN,
        "## Word sense disambiguation on WordNet 3.0 examples (paper "
        "Table 5's method)",
        "",
        "```sh",
        f"python examples/word_sense_wordnet.py{_arguments(results)}"
        f"   # {results['seconds']:.0f} s",
        "```",
        "",
        f"Results file `examples/results/word_sense_wordnet.json`: commit "
        f"`{prov['commit'][:10]}`, {prov['cpu_model']}, "
        f"{prov['cpu_cores']} cores, load {prov['load_average']}, "
        f"{prov['date_utc']} UTC. Model `{results['model']['name']}` "
        f"(weights digest `{results['model']['weights_digest']}`). Data: "
        f"Debian `{data['package']}` (sha256 `{data['sha256'][:12]}...`), "
        f"{data['sentences_embedded']:,} distinct sentences embedded."
        + _cove_line(results),
        "",
        "Each sense's training examples are averaged into one vector per "
        "layer; a test occurrence gets the sense with the most similar "
        "mean (cosine), among its lemma's senses seen in training. Every "
        "test example gets a prediction, so F1 = accuracy. Intervals: "
        f"95% percentile bootstrap over test examples "
        f"({results['resamples']} resamples, seed {results['seed']}).",
    ]
    for name, setting in results["settings"].items():
        c = setting["counts"]
        lines += [
            "",
            f"### `{name}`: {c['lemmas']:,} lemmas, {c['senses']:,} senses, "
            f"{c['train_examples']:,} train / {c['test_examples']:,} test "
            "examples",
            "",
            setting["description"],
            f"Test senses never seen in training: "
            f"{c['test_senses_unseen_in_train']:,} (ceiling "
            f"{100 * setting['ceiling']:.1f}%).",
            "",
            "| method | F1 (%) | 95% interval |",
            "| --- | --- | --- |",
        ]
        for key, method in setting["methods"].items():
            lines.append(
                f"| {LABELS[key]} | {100 * method['f1']:.1f} | "
                f"{100 * method['low']:.1f}-{100 * method['high']:.1f} |"
            )
        lines.append(
            "| random sense among train senses (expected) | "
            f"{100 * setting['random_sense_expected']:.1f} | |"
        )
        lines += [
            "",
            "Paired bootstrap of differences (percentage points; the share "
            "of resamples <= 0 is a one-sided p-value), resampling test "
            "examples, and resampling lemmas (all test examples of a drawn "
            "lemma):",
            "",
            "| difference | mean | 95% interval (examples) | <= 0 | "
            "95% interval (lemmas) | <= 0 |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        by_lemma = setting["paired_differences_by_lemma"]
        for key, d in setting["paired_differences"].items():
            g = by_lemma[key]
            lines.append(
                f"| {key.replace('_minus_', ' - ')} | "
                f"{100 * d['difference']:+.1f} | {_span(d)} | "
                f"{d['fraction_not_positive']:.3f} | {_span(g)} | "
                f"{g['fraction_not_positive']:.3f} |"
            )
    lines += _seed_table(results)
    lines += ["", f"For scale only (different data): {results['paper']}.", END]
    return "\n".join(lines) + "\n"


def _seed_table(results):
    main = results["settings"]["main"]["methods"]
    rows = {str(results["seed"]): {k: v["f1"] for k, v in main.items()}}
    rows.update(results["main_other_split_seeds"])
    if len(rows) < 2:
        return []
    names = list(main)
    lines = [
        "",
        "The `main` set split with other seeds (same examples; F1 %, no "
        "intervals). MFS and WordNet's first sense cannot change: the "
        "split fixes how many examples of each sense go to train and to "
        "test, only not which.",
        "",
        "| split seed | "
        + " | ".join(SHORT[n] for n in names)
        + " | layer 2 - layer 1 |",
        "| --- |" + " --- |" * (len(names) + 1),
    ]
    for seed, f1 in rows.items():
        cells = " | ".join(f"{100 * f1[n]:.1f}" for n in names)
        gap = 100 * (f1["layer_2"] - f1["layer_1"])
        lines.append(f"| {seed} | {cells} | {gap:+.1f} |")
    return lines


def _cove_line(results):
    cove = results.get("cove")
    if not cove:
        return ""
    return (
        f" CoVe: `{cove['encoder']}` (sha256 `{cove['sha256'][:12]}...`; "
        "`cove_0` its GloVe input, `cove_1`, `cove_2` its biLSTM layers)."
    )


def _arguments(results):
    """The run's command-line arguments, as recorded by the run."""
    return "".join(" " + word for word in results.get("arguments", []))


def _span(d):
    return f"{100 * d['low']:+.1f} to {100 * d['high']:+.1f}"


def write_section(path, section):
    """Replaces (or appends) the generated section of `path`."""
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section.rstrip("\n") + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    from keras_elmo.utils.atomic import atomic_write

    with atomic_write(path, "w") as f:
        f.write(text)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    json_path = (
        argv[0]
        if argv
        else os.path.join(HERE, "results", "word_sense_wordnet.json")
    )
    md_path = argv[1] if len(argv) > 1 else os.path.join(HERE, "RESULTS.md")
    with open(json_path, encoding="utf-8") as f:
        write_section(md_path, render_markdown(json.load(f)))
    print(md_path)


if __name__ == "__main__":
    main()
