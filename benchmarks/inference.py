"""biLM inference throughput: tokens/s, achieved GFLOP/s, matmul reference.

    python benchmarks/inference.py [--presets tiny,small,original]
        [--batches 64x20,1x20] [--runs 5] [--threads 2]
        [--variants fp32,bf16,cache,bf16+cache] [--jit]
        [--options O.json --weights W.hdf5] [--text FILE]

Sentences are drawn exactly as `shared/ref/bench_allennlp.py` draws them
(`random.Random(0)` over its word list), so `original` here and there is
the same workload. Weights are random (seeded) unless `--options` and
`--weights` name a bilm-tf / AllenNLP model (e.g. the harness's
`/tmp/elmo_ref/w/original_*`, the very file AllenNLP is timed on).

Variants, timed alternately (one call of each per round, median of
`--runs` rounds after a warm-up, so load drift hits them alike):

- `fp32`: `bilm(char_ids)`, float32. The biLM embeds each distinct token
  of the batch once (`UniqueTokens`), over its own char-CNN windows.
- `fp32-every-token`: `contextualize(embed_tokens(...))`, which embeds
  every token position (no de-duplication), float32: what `fp32` saves.
- `bf16`: the same weights under `dtype="mixed_bfloat16"` (matmuls and
  convolutions in bfloat16; LSTM cell state, gates, clipping in float32).
- `cache`: string tokens through `TokenEmbeddingCache` (vocabulary: the
  word list minus every 8th word, so some tokens take the char-CNN path)
  and `BiLM.contextualize`, float32.
- `bf16+cache`: both.

Each variant's line gives tokens/s, its speed-up over `fp32`, and the
max abs difference of its `word_emb`, `lstm_outputs1`, `lstm_outputs2`
from fp32's on the same batch. GFLOP/s counts the FLOPs executed
(analytic, multiply-adds x 2, boundaries excluded; the token embedding
(char-CNN, highway, projection) once per distinct token with
de-duplication, or only for unknown tokens with the cache; the char-CNN
over the windows it computes, those starting within each token's own
slots). Also prints the same-process matmul
GFLOP/s at the LSTM's shape (`64 x 2P` times `2P x 4H` of `original`), in
float32 and bfloat16.
"""

import argparse
import os
import random
import statistics
import time

from real_text import WORDS  # bench_allennlp.py's word list (same workload)
from real_text import read_sentences

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

VOCABULARY = [w for i, w in enumerate(WORDS) if i % 8 != 7]
KEYS = ("word_emb", "lstm_outputs1", "lstm_outputs2")


def make_batch(n_sent, n_tok, seed=0, text=None):
    """bench_allennlp.py's `make_batch`, or real sentences from `text`.

    With `text` (a sentence-per-line file, `.gz` too): its first `n_sent`
    lines of at least `n_tok` tokens, cut to `n_tok` tokens.
    """
    if text is None:
        rng = random.Random(seed)
        return [
            [rng.choice(WORDS) for _ in range(n_tok)] for _ in range(n_sent)
        ]
    return read_sentences(
        text, lines=n_sent, min_tokens=n_tok, max_tokens=n_tok
    )


def token_flops(cfg, occupied=None):
    """FLOPs of one token's char-CNN, highway and projection.

    `occupied`: the token's character slots (BOW, bytes, EOW); the char-CNN
    computes only the windows starting in those slots, as
    `CharCNNEmbedding` does. None: all 50 slots.
    """
    cnn = char_cnn_flops(cfg, occupied)
    f = cfg.num_filters
    highway = cfg.num_highway_layers * 2 * 2 * f * f
    projection = 2 * f * cfg.projection_dim
    return cnn + highway + projection


def char_cnn_flops(cfg, occupied=None):
    """FLOPs of one token's char-CNN over the windows starting in its
    `occupied` slots (None: all 50), as `CharCNNEmbedding` computes."""
    slots = cfg.max_characters_per_token
    return sum(
        2
        * min(slots - w + 1, max(occupied or slots, 1))
        * w
        * cfg.char_embedding_dim
        * n
        for w, n in cfg.filters
    )


def lstm_flops(cfg):
    """FLOPs of one token through both directions of every LSTM layer."""
    h, p = cfg.lstm_units, cfg.projection_dim
    return 2 * cfg.num_layers * (2 * (2 * p) * 4 * h + 2 * h * p)


def flops_per_token(cfg):
    """Multiply-add FLOPs (x2) of one token through the biLM."""
    return token_flops(cfg) + lstm_flops(cfg)


def executed_flops_per_token(cfg, sentences):
    """FLOPs per token the biLM executes on `sentences` (lists of str).

    The token part runs once per distinct token (`UniqueTokens`) and over
    the windows starting in that token's own character slots; the biLSTM
    per token.
    """
    tokens = [t for s in sentences for t in s]
    token_part = sum(
        token_flops(cfg, occupied_slots(cfg, t)) for t in set(tokens)
    )
    return lstm_flops(cfg) + token_part / max(len(tokens), 1)


def occupied_slots(cfg, token):
    """Character slots `token` fills: BOW, its UTF-8 bytes (cut), EOW."""
    return min(len(token.encode("utf-8")), cfg.max_characters_per_token - 2) + 2


def matmul_gflops(tf, m, k, n, dtype, runs):
    a = tf.cast(tf.random.normal((m, k)), dtype)
    b = tf.cast(tf.random.normal((k, n)), dtype)
    mm = tf.function(lambda a, b: tf.matmul(a, b))
    mm(a, b).numpy()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        mm(a, b).numpy()
        times.append(time.perf_counter() - start)
    return 2 * m * k * n / statistics.median(times) / 1e9


def build_variants(names, bilm, cfg, jit):
    """`{name: (function, takes_tokens, bilm)}`."""
    import tensorflow as tf
    from keras import ops

    import keras_elmo
    from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache

    models = {"fp32": bilm}
    if any(n.startswith("bf16") for n in names):
        low = keras_elmo.BiLM(cfg, dtype="mixed_bfloat16")
        low.set_weights(bilm.get_weights())
        models["bf16"] = low
    variants = {}
    for name in names:
        model = models["bf16" if name.startswith("bf16") else "fp32"]
        if name == "fp32-every-token":
            add_boundaries = model.get_layer("add_sentence_boundaries")

            def run(ids, model=model, add_boundaries=add_boundaries):
                embedded = model.embed_tokens(add_boundaries(ids))
                out = model.contextualize(embedded, ops.any(ids > 0, -1))
                return [out[k] for k in KEYS]

            variants[name] = (tf.function(run, jit_compile=jit), False)
        elif name.endswith("cache"):
            cache = TokenEmbeddingCache(VOCABULARY, model)
            cache.build()

            def run(tokens, model=model, cache=cache):
                out = model.contextualize(cache(tokens), tokens != "")
                return [out[k] for k in KEYS]

            # Strings cannot be XLA-compiled: the cache path never is.
            variants[name] = (tf.function(run), True)
        else:

            def run(ids, model=model):
                out = model(ids)
                return [out[k] for k in KEYS]

            variants[name] = (tf.function(run, jit_compile=jit), False)
    return variants


def bench_model(label, bilm, cfg, args):
    import numpy as np
    import tensorflow as tf

    import keras_elmo

    names = args.variants.split(",")
    variants = build_variants(["fp32"] + names, bilm, cfg, args.jit)
    known = set(VOCABULARY)
    for shape in args.batches.split(","):
        batch, steps = (int(v) for v in shape.split("x"))
        sentences = make_batch(batch, steps, text=args.text)
        unknown = sum(t not in known for s in sentences for t in s)
        unknown /= batch * steps
        distinct = len({t for s in sentences for t in s}) / (batch * steps)
        longest = max(len(t.encode("utf-8")) for s in sentences for t in s)
        longest = min(longest, cfg.max_characters_per_token - 2) + 2
        inputs = {
            False: tf.constant(keras_elmo.batch_to_ids(sentences)),
            True: tf.constant(sentences),
        }
        reference = None
        outputs, times = {}, {n: [] for n in names}
        for name in ["fp32"] + names:  # warm-up, trace, outputs
            fn, takes_tokens = variants[name]
            outputs[name] = [
                np.asarray(tf.cast(x, tf.float32))
                for x in fn(inputs[takes_tokens])
            ]
        reference = outputs["fp32"]
        for _ in range(args.runs):
            for name in names:
                fn, takes_tokens = variants[name]
                start = time.perf_counter()
                fn(inputs[takes_tokens])[-1].numpy()
                times[name].append(time.perf_counter() - start)
        tokens = batch * steps
        base = statistics.median(times[names[0]])
        for name in names:
            seconds = statistics.median(times[name])
            if name.endswith("cache"):
                flops = lstm_flops(cfg) + token_flops(cfg, longest) * unknown
            elif name == "fp32-every-token":
                flops = lstm_flops(cfg) + token_flops(cfg, longest)
            else:
                flops = executed_flops_per_token(cfg, sentences)
            dev = max(
                float(np.abs(a - b).max())
                for a, b in zip(outputs[name], reference)
            )
            print(
                f"{label:>9} {batch:>3}x{steps:<3} {name:>10} "
                f"{tokens / seconds:9.1f} tokens/s {seconds * 1e3:8.1f} "
                f"ms/batch {flops * tokens / seconds / 1e9:6.1f} GFLOP/s  "
                f"x{base / seconds:4.2f} vs {names[0]}  "
                f"max|diff| vs fp32 {dev:.2e}"
                + (
                    f"  (unknown tokens {unknown:.0%})"
                    if "cache" in name
                    else f"  (distinct tokens {distinct:.0%})"
                    if name != "fp32-every-token"
                    else ""
                )
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--presets", default="tiny,small,original")
    parser.add_argument("--batches", default="64x20,1x20")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", default="fp32")
    parser.add_argument(
        "--jit", action="store_true", help="XLA-compile (not the cache)."
    )
    parser.add_argument(
        "--text",
        help="Real sentences (sentence-per-line file) instead of the word "
        "list; the cache variants' vocabulary stays the word list.",
    )
    parser.add_argument("--options", help="bilm-tf options.json")
    parser.add_argument("--weights", help="bilm-tf weights.hdf5")
    args = parser.parse_args(argv)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras

    import keras_elmo

    print(
        f"threads={args.threads} runs={args.runs} (median) jit={args.jit} "
        f"load={os.getloadavg()[0]:.1f}"
    )
    if args.options:
        bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
        bench_model("file", bilm, bilm.config, args)
    else:
        for name in args.presets.split(","):
            cfg = keras_elmo.BiLMConfig.from_architecture(name)
            keras.utils.set_random_seed(0)
            bench_model(name, keras_elmo.BiLM(cfg), cfg, args)
    cfg = keras_elmo.BiLMConfig.from_architecture("original")
    m, k, n = 64, 2 * cfg.projection_dim, 4 * cfg.lstm_units
    runs = max(args.runs, 20)
    for dtype in ("float32", "bfloat16"):
        gflops = matmul_gflops(tf, m, k, n, dtype, runs)
        print(f"matmul {m}x{k}x{n} {dtype}: {gflops:.1f} GFLOP/s")
    print(f"load at the end={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
