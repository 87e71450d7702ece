"""How far a sentence's vectors move with its batch, on this CPU.

    python benchmarks/batch_rounding.py [--lines 64] [--batch-size 16]
        [--results benchmarks/results/batch_rounding.json]

The biLM is stateless: a sentence's vectors are the same function of its
tokens whatever else is in the batch. In float32 they are equal bit for
bit only where the CPU's matmul kernels round a row the same way for
every row count; oneDNN and Eigen choose micro-kernels and blockings by
the shape, so on some CPUs (e.g. AVX2-only ones) a row's last bits depend
on how many rows share the call. This script measures both:

- `sentences`: the shipped model (`elmo_small_en`) embeds `--lines` real
  lines of en_pd_lm test text (`real_text.read_sentences`: >= 3 tokens,
  cut at 64) once in `Embedder.embed`'s length-sorted
  batches of `--batch-size` and once one sentence per call; per layer,
  the largest `max |batch - alone| / max |alone|` over the sentences and
  the share of sentences equal bit for bit.
- `matmul_rows`: for the model's matmul shapes `(k, n)`, whether row `i`
  of `X[:m] @ W` equals row `i` of `X[:M] @ W` (`M` = 600) for `m` in a
  sweep of row counts, as given and with the rows zero-padded to a
  multiple of 12 and of 24 (the cheap remedy, tried: `m` listed where it
  still differs).

Written to `--results` with provenance.
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from provenance import provenance  # noqa: E402
from provenance import write_json  # noqa: E402
from real_text import read_sentences  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(HERE, "..", "..", "shared", "data", "en_pd_lm")
FULL = 600
ROWS = list(range(1, 100, 3)) + list(range(100, FULL, 37))
LAYERS = ("word_emb", "lstm_outputs1", "lstm_outputs2")


def sentence_rounding(embedder, token_lists, batch_size):
    import numpy as np

    batched = embedder(batch_size).embed(token_lists)
    alone_embedder = embedder(1)
    worst = dict.fromkeys(LAYERS, 0.0)
    equal = dict.fromkeys(LAYERS, 0)
    for tokens, together in zip(token_lists, batched):
        alone = alone_embedder.embed([tokens])[0]
        for index, layer in enumerate(LAYERS):
            a, b = together[index], alone[index]
            scale = max(float(np.abs(b).max()), 1e-30)
            worst[layer] = max(worst[layer], float(np.abs(a - b).max()) / scale)
            equal[layer] += bool(np.array_equal(a, b))
    n = len(token_lists)
    return {
        layer: {
            "max_relative_difference": worst[layer],
            "bit_identical_share": equal[layer] / n,
        }
        for layer in LAYERS
    }


def row_count_dependence(k, n, seed=0):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    w = tf.constant(rng.standard_normal((k, n)).astype(np.float32))
    x = rng.standard_normal((FULL, k)).astype(np.float32)
    full = tf.matmul(tf.constant(x), w).numpy()
    out = {}
    for block in (1, 12, 24):
        differing = []
        for m in ROWS:
            padded = -(-m // block) * block
            xp = np.zeros((padded, k), np.float32)
            xp[:m] = x[:m]
            rows = tf.matmul(tf.constant(xp), w).numpy()[:m]
            if not np.array_equal(rows, full[:m]):
                differing.append(m)
        out[f"pad_to_{block}"] = {
            "row_counts_tried": len(ROWS),
            "differing": differing,
        }
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument(
        "--results",
        default=os.path.join(HERE, "results", "batch_rounding.json"),
    )
    args = parser.parse_args(argv)
    import keras_elmo

    def embedder(batch_size):
        return keras_elmo.Embedder.from_preset(
            "elmo_small_en", batch_size=batch_size
        )

    config = keras_elmo.BiLM.from_preset("elmo_small_en").config
    p, h = config.projection_dim, config.lstm_units
    f = config.num_filters
    shapes = {
        "lstm_recurrent": (p, 4 * h),
        "lstm_projection": (h, p),
        "highway": (f, 2 * f),
        "token_projection": (f, p),
    }
    results = {
        "model": "elmo_small_en",
        "lines": args.lines,
        "batch_size": args.batch_size,
        "sentences": sentence_rounding(
            embedder,
            read_sentences(os.path.join(TEXT, "test.txt.gz"), args.lines),
            args.batch_size,
        ),
        "matmul_rows": {
            name: {"k": k, "n": n, **row_count_dependence(k, n)}
            for name, (k, n) in shapes.items()
        },
        "provenance": provenance(written=[args.results]),
    }
    write_json(args.results, results)
    for layer, figures in results["sentences"].items():
        sys.stdout.write(f"{layer}: {figures}\n")
    for name, figures in results["matmul_rows"].items():
        sys.stdout.write(f"{name}: {figures}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
