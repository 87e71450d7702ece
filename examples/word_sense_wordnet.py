"""Word sense disambiguation on WordNet 3.0's example sentences, per
biLM layer, with the method of Peters et al. 2018 (Sec. 5.3, Table 5).

    python examples/word_sense_wordnet.py

One command: fetches WordNet 3.0 if needed (`fetch_wordnet.py`, cached
in the git-ignored `examples/data/wordnet/`), builds the sense-labelled
set (`wordnet_senses.py`), embeds every example sentence once with the
shipped `elmo_small_en` (longest first, in batches), classifies each test
occurrence by the nearest sense mean per layer (`nearest_sense.py`),
and writes `examples/results/word_sense_wordnet.json` (with provenance)
and its Markdown table into `examples/RESULTS.md`.

Two evaluation sets come from one split rule (`wordnet_senses.py`):

* `main`: senses with at least 2 examples, lemmas with at least 2 such
  senses. Every test sense has training examples.
* `all_senses`: every sense with an example, lemmas with at least 2.
  One-example senses alternate between train and test, so many test
  examples have a sense never seen in training: an error for every
  method (the `ceiling` column says how many can be right at all).

Layers: 0 = `[x; x]` (context-free token layer), 1 and 2 = biLSTM
outputs, and `average` = the mean of the three.
"""

import argparse
import collections
import logging
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import fetch_wordnet  # noqa: E402
import nearest_sense  # noqa: E402
import wordnet_senses  # noqa: E402

DEFAULT_JSON = os.path.join(HERE, "results", "word_sense_wordnet.json")
DEFAULT_MD = os.path.join(HERE, "RESULTS.md")
SETTINGS = {"main": 2, "all_senses": 1}  # name -> min examples per sense
BEGIN = "<!-- word_sense_wordnet: generated, do not edit -->"
END = "<!-- /word_sense_wordnet -->"
PAPER = (
    "Peters et al. 2018, Table 5 (SemCor 3.0 training, Raganato et al. "
    "2017 all-words test): WordNet 1st sense 65.9, biLM first layer "
    "67.4, second layer 69.0 F1"
)

logger = logging.getLogger("word_sense_wordnet")


def embed_targets(bilm, examples, max_batch_tokens=2048):
    """`{(tokens, position): [L + 1, 2P] float32}` for the examples; each
    distinct sentence runs once."""
    import bilm_cache

    wanted = collections.defaultdict(set)
    for example in examples:
        wanted[example.tokens].add(example.position)
    sentences = sorted(wanted)
    vectors = {}
    for i, layers in bilm_cache.iter_layers(
        bilm, [list(s) for s in sentences], max_batch_tokens
    ):
        for position in wanted[sentences[i]]:
            vectors[(sentences[i], position)] = layers[:, position]
    return vectors, len(sentences)


def layer_views(stack):
    """`{name: [N, 2P]}` from `[N, L + 1, 2P]`: each layer and the mean."""
    views = {f"layer_{j}": stack[:, j] for j in range(stack.shape[1])}
    views["average"] = stack.mean(axis=1)
    return views


def evaluate_setting(train, test, ranks, vectors, resamples, seed):
    """All classifiers and statistics for one train/test split."""
    keys = sorted({(e.lemma, e.pos) for e in train + test})
    lemma_id = {key: i for i, key in enumerate(keys)}
    senses = sorted(
        {(e.lemma, e.pos, e.sense) for e in train + test},
        key=lambda s: (s[0], s[1], ranks.get(s, 10**6), s[2]),
    )
    sense_id = {s: i for i, s in enumerate(senses)}

    def encode(items):
        lemma = np.array([lemma_id[(e.lemma, e.pos)] for e in items])
        sense = np.array([sense_id[(e.lemma, e.pos, e.sense)] for e in items])
        stack = np.stack([vectors[(e.tokens, e.position)] for e in items])
        return lemma, sense, stack

    tr_lemma, tr_sense, tr_stack = encode(train)
    te_lemma, te_sense, te_stack = encode(test)
    predictions = {}
    test_views = layer_views(te_stack)
    for name, train_x in layer_views(tr_stack).items():
        predictions[name] = nearest_sense.nearest_mean(
            train_x, tr_lemma, tr_sense, test_views[name], te_lemma
        )
    predictions["most_frequent_sense"] = nearest_sense.most_frequent_sense(
        tr_lemma, tr_sense, te_lemma
    )
    predictions["wordnet_first_sense"] = nearest_sense.first_sense(
        tr_lemma, tr_sense, te_lemma
    )
    names = list(predictions)
    correct = np.stack([predictions[n] == te_sense for n in names])
    accuracy, low, high, _ = nearest_sense.bootstrap(correct, resamples, seed)
    seen = {(int(k), int(s)) for k, s in zip(tr_lemma, tr_sense)}
    pos = np.array([e.pos for e in test])
    methods = {}
    for k, name in enumerate(names):
        methods[name] = {
            "f1": float(accuracy[k]),
            "low": float(low[k]),
            "high": float(high[k]),
            "by_pos": {
                p: float(correct[k][pos == p].mean()) for p in sorted(set(pos))
            },
        }
    row = {n: correct[k] for k, n in enumerate(names)}
    pairs = [
        ("layer_2", "layer_1"),
        ("layer_1", "most_frequent_sense"),
        ("layer_2", "most_frequent_sense"),
        ("average", "most_frequent_sense"),
    ]
    return {
        "counts": {
            "lemmas": len(keys),
            "senses": len(senses),
            "train_examples": len(train),
            "test_examples": len(test),
            "test_by_pos": dict(collections.Counter(pos.tolist())),
            "test_senses_unseen_in_train": int(
                sum(
                    (int(k), int(s)) not in seen
                    for k, s in zip(te_lemma, te_sense)
                )
            ),
        },
        "ceiling": float(
            np.mean(
                [(int(k), int(s)) in seen for k, s in zip(te_lemma, te_sense)]
            )
        ),
        "random_sense_expected": nearest_sense.random_sense_accuracy(
            tr_lemma, tr_sense, te_lemma, te_sense
        ),
        "methods": methods,
        "paired_differences": {
            f"{a}_minus_{b}": nearest_sense.paired_difference(
                row[a], row[b], resamples, seed
            )
            for a, b in pairs
        },
        "paired_differences_by_lemma": {
            f"{a}_minus_{b}": nearest_sense.paired_difference(
                row[a], row[b], resamples, seed, groups=te_lemma
            )
            for a, b in pairs
        },
    }


LABELS = {
    "layer_0": "biLM layer 0 (token layer, no context)",
    "layer_1": "biLM layer 1 (first biLSTM)",
    "layer_2": "biLM layer 2 (top biLSTM)",
    "average": "mean of layers 0-2",
    "most_frequent_sense": "most frequent sense in train (MFS)",
    "wordnet_first_sense": "WordNet's first sense among train senses",
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
        f"python examples/word_sense_wordnet.py   # {results['seconds']:.0f} s",
        "```",
        "",
        f"Results file `examples/results/word_sense_wordnet.json`: commit "
        f"`{prov['commit'][:10]}`, {prov['cpu_model']}, "
        f"{prov['cpu_cores']} cores, load {prov['load_average']}, "
        f"{prov['date_utc']} UTC. Model `{results['model']['name']}` "
        f"(weights digest `{results['model']['weights_digest']}`). Data: "
        f"Debian `{data['package']}` (sha256 `{data['sha256'][:12]}...`), "
        f"{data['sentences_embedded']:,} distinct sentences embedded.",
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
    lines += ["", f"For scale only (different data): {PAPER}.", END]
    return "\n".join(lines) + "\n"


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


def build_sets(dict_dir, seed, test_fraction, max_lemmas=None):
    """`{setting: (train, test, description)}` and the sense ranks."""
    examples, ranks = wordnet_senses.load_examples(dict_dir)
    sets = {}
    for name, min_examples in SETTINGS.items():
        groups = wordnet_senses.group_by_lemma(examples, min_examples)
        if max_lemmas:
            groups = dict(list(groups.items())[:max_lemmas])
        train, test = wordnet_senses.split_examples(groups, seed, test_fraction)
        description = (
            f"Senses with at least {min_examples} example(s), lemmas with "
            "at least 2 such senses; per lemma and sense (seeded), "
            f"floor({test_fraction} n), at least 1, of a sense's n >= 2 "
            "examples go to test, the rest to train"
        )
        if min_examples < 2:
            description += "; one-example senses alternate train, test"
        description += "."
        sets[name] = (train, test, description)
    return sets, ranks, len(examples)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=fetch_wordnet.DEFAULT_OUT)
    parser.add_argument("--url", default=fetch_wordnet.DEB_URL)
    parser.add_argument("--sha256", default=fetch_wordnet.DEB_SHA256)
    parser.add_argument("--model", default="elmo_small_en")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-fraction", type=float, default=0.5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument(
        "--max-lemmas", type=int, default=None, help="smoke tests only"
    )
    parser.add_argument("--out-json", default=DEFAULT_JSON)
    parser.add_argument(
        "--results-md", default=DEFAULT_MD, help="'' to skip the Markdown"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.time()

    try:
        dict_dir, sha256 = fetch_wordnet.fetch(
            args.data_dir, args.url, args.sha256
        )
    except RuntimeError as error:
        sys.exit(f"error: {error}")
    sets, ranks, n_found = build_sets(
        dict_dir, args.seed, args.test_fraction, args.max_lemmas
    )

    import bilm_cache
    from provenance import provenance
    from provenance import write_json

    bilm = bilm_cache.load_bilm(args.model)
    everything = [e for tr, te, _ in sets.values() for e in tr + te]
    t0 = time.time()
    vectors, n_sentences = embed_targets(bilm, everything)
    embed_seconds = time.time() - t0
    logger.info("embedded %d sentences in %.0f s", n_sentences, embed_seconds)

    settings = {}
    for name, (train, test, description) in sets.items():
        settings[name] = {"description": description}
        settings[name].update(
            evaluate_setting(
                train, test, ranks, vectors, args.resamples, args.seed
            )
        )
        methods = settings[name]["methods"]
        logger.info(
            "%s: %s",
            name,
            ", ".join(f"{k} {100 * v['f1']:.1f}" for k, v in methods.items()),
        )
    results = {
        "provenance": provenance(),
        "data": {
            "package": fetch_wordnet.DEB_NAME,
            "url": args.url,
            "sha256": sha256,
            "licence": "WordNet 3.0 licence (Princeton University), "
            "permissive; see examples/data/wordnet/LICENSE",
            "examples_with_lemma_found": n_found,
            "sentences_embedded": n_sentences,
            "tokenizer": "shared/data/scripts/build_en_lm_corpus.py TOK",
            "lemma_matching": "lower-cased token, final 's removed, equal "
            "to the lemma or mapped to it by WordNet's exception list or "
            "morphy's suffix rules; first match; single-word lemmas only",
        },
        "model": {
            "name": args.model,
            "weights_digest": bilm_cache.weights_digest(bilm),
        },
        "seed": args.seed,
        "test_fraction": args.test_fraction,
        "resamples": args.resamples,
        "max_lemmas": args.max_lemmas,
        "embed_seconds": round(embed_seconds, 1),
        "seconds": round(time.time() - start, 1),
        "paper": PAPER,
        "settings": settings,
    }
    write_json(args.out_json, results)
    if args.results_md:
        write_section(args.results_md, render_markdown(results))
    logger.info("wrote %s", args.out_json)
    return results


if __name__ == "__main__":
    main()
