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
  method (the `ceiling` says how many can be right at all); and the
  one-example senses in train are never right, which favours the
  most-frequent-sense baseline. `main` is the primary evaluation.

Layers: 0 = `[x; x]` (context-free token layer), 1 and 2 = biLSTM
outputs, and `average` = the mean of the three. With `--cove-encoder`
(`examples/models/cove_encoder.keras`, GloVe fetched), CoVe's GloVe
input and two biLSTM layers are classified the same way
(`word_sense_cove.py`), as in the paper's Table 5.
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

import fetch_paper_data  # noqa: E402
import fetch_wordnet  # noqa: E402
import nearest_sense  # noqa: E402
import word_sense_cove  # noqa: E402
import word_sense_report  # noqa: E402
import wordnet_senses  # noqa: E402

DEFAULT_JSON = os.path.join(HERE, "results", "word_sense_wordnet.json")
DEFAULT_MD = os.path.join(HERE, "RESULTS.md")
SETTINGS = {"main": 2, "all_senses": 1}  # name -> min examples per sense
PAPER = (
    "Peters et al. 2018, Table 5 (SemCor 3.0 training, Raganato et al. "
    "2017 all-words test): WordNet 1st sense 65.9, CoVe first layer 59.4, "
    "second layer 64.7, biLM first layer 67.4, second layer 69.0 F1"
)

logger = logging.getLogger("word_sense_wordnet")


def embed_targets(bilm, examples, max_batch_tokens=2048):
    """`{(tokens, position): [L + 1, 2P] float32}` for the examples; each
    distinct sentence runs once."""
    import bilm_cache

    wanted = wordnet_senses.positions_by_sentence(examples)
    sentences = sorted(wanted)
    vectors = {}
    for i, layers in bilm_cache.iter_layers(
        bilm, [list(s) for s in sentences], max_batch_tokens
    ):
        for position in wanted[sentences[i]]:
            # A copy, so the sentence's other positions can be freed.
            vectors[(sentences[i], position)] = layers[:, position].copy()
    return vectors, len(sentences)


def layer_views(stack):
    """`{name: [N, 2P]}` from `[N, L + 1, 2P]`: each layer and the mean."""
    views = {f"layer_{j}": stack[:, j] for j in range(stack.shape[1])}
    views["average"] = stack.mean(axis=1)
    return views


def evaluate_setting(
    train, test, ranks, vectors, resamples, seed, cove_vectors=None
):
    """All classifiers and statistics for one train/test split
    (`cove_vectors`: optional, `word_sense_cove.cove_targets`)."""
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
        return lemma, sense

    def stack(items, table):
        return np.stack([table[(e.tokens, e.position)] for e in items])

    tr_lemma, tr_sense = encode(train)
    te_lemma, te_sense = encode(test)
    train_views = layer_views(stack(train, vectors))
    test_views = layer_views(stack(test, vectors))
    if cove_vectors is not None:
        train_views.update(
            word_sense_cove.cove_views(stack(train, cove_vectors))
        )
        test_views.update(word_sense_cove.cove_views(stack(test, cove_vectors)))
    predictions = {}
    for name, train_x in train_views.items():
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
    if cove_vectors is not None:
        pairs += [("layer_1", "cove_1"), ("layer_2", "cove_2")]
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


def build_sets(examples, seed, test_fraction, max_lemmas=None):
    """`{setting: (train, test, description)}` from `load_examples`."""
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
            description += (
                "; one-example senses alternate train, test. So a test "
                "example of a one-example sense has no training example "
                "(an error for every method), and a one-example sense in "
                "train is never the right answer: this favours MFS, which "
                "prefers senses with more training examples"
            )
        sets[name] = (train, test, description + ".")
    return sets


def other_splits(examples, ranks, vectors, seeds, args, cove_vectors=None):
    """F1 of every method on the `main` set under other split seeds (the
    same examples, split differently; no bootstrap)."""
    out = {}
    for seed in seeds:
        sets = build_sets(examples, seed, args.test_fraction, args.max_lemmas)
        train, test, _ = sets["main"]
        methods = evaluate_setting(
            train, test, ranks, vectors, 1, seed, cove_vectors
        )
        out[str(seed)] = {k: v["f1"] for k, v in methods["methods"].items()}
    return out


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
        "--split-seeds",
        default="1,2,3,4",
        help="other split seeds to rerun the `main` set with (no bootstrap)",
    )
    parser.add_argument(
        "--max-lemmas", type=int, default=None, help="smoke tests only"
    )
    parser.add_argument(
        "--cove-encoder",
        default=None,
        help="also classify with CoVe's layers (cove_encoder.keras)",
    )
    parser.add_argument(
        "--glove-dir", default=None, help="GloVe for --cove-encoder"
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
    examples, ranks = wordnet_senses.load_examples(dict_dir)
    sets = build_sets(examples, args.seed, args.test_fraction, args.max_lemmas)

    import bilm_cache
    from provenance import provenance
    from provenance import write_json

    bilm = bilm_cache.load_bilm(args.model)
    everything = [e for tr, te, _ in sets.values() for e in tr + te]
    t0 = time.time()
    vectors, n_sentences = embed_targets(bilm, everything)
    embed_seconds = time.time() - t0
    logger.info("embedded %d sentences in %.0f s", n_sentences, embed_seconds)
    cove_vectors = None
    if args.cove_encoder:
        cove_vectors = word_sense_cove.cove_targets(
            args.cove_encoder,
            args.glove_dir or word_sense_cove.default_glove_dir(),
            everything,
        )
        logger.info("CoVe: %d target vectors", len(cove_vectors))

    settings = {}
    for name, (train, test, description) in sets.items():
        settings[name] = {"description": description}
        settings[name].update(
            evaluate_setting(
                train,
                test,
                ranks,
                vectors,
                args.resamples,
                args.seed,
                cove_vectors,
            )
        )
        methods = settings[name]["methods"]
        logger.info(
            "%s: %s",
            name,
            ", ".join(f"{k} {100 * v['f1']:.1f}" for k, v in methods.items()),
        )
    split_seeds = [int(x) for x in args.split_seeds.split(",") if x]
    results = {
        "provenance": provenance(),
        "data": {
            "package": fetch_wordnet.DEB_NAME,
            "url": args.url,
            "sha256": sha256,
            "licence": "WordNet 3.0 licence (Princeton University), "
            "permissive; see examples/data/wordnet/LICENSE",
            "examples_with_lemma_found": len(examples),
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
        "arguments": list(sys.argv[1:] if argv is None else argv),
        "seed": args.seed,
        "test_fraction": args.test_fraction,
        "resamples": args.resamples,
        "max_lemmas": args.max_lemmas,
        "embed_seconds": round(embed_seconds, 1),
        "seconds": round(time.time() - start, 1),
        "paper": PAPER,
        "settings": settings,
        "main_other_split_seeds": other_splits(
            examples, ranks, vectors, split_seeds, args, cove_vectors
        ),
    }
    if args.cove_encoder:
        results["cove"] = {
            "encoder": os.path.relpath(args.cove_encoder, REPO),
            "sha256": fetch_paper_data.sha256_of(args.cove_encoder),
        }
    write_json(args.out_json, results)
    if args.results_md:
        word_sense_report.write_section(
            args.results_md, word_sense_report.render_markdown(results)
        )
    logger.info("wrote %s", args.out_json)
    return results


if __name__ == "__main__":
    main()
