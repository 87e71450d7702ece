"""biLM inference throughput: tokens/s, achieved GFLOP/s, matmul reference.

    python benchmarks/inference.py [--presets tiny,small,original]
        [--batches 64x20,1x20] [--runs 5] [--threads 2]

Random weights; char ids of random lowercase words; the timed call is a
compiled `tf.function` around `bilm(ids)` after one warm-up call. FLOPs are
counted analytically per token (multiply-adds x 2, boundaries excluded).
Prints one line per (preset, batch) and the same-process matmul GFLOP/s
at the LSTM's shape (`B x 2P` times `2P x 4H` for `original`).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def flops_per_token(cfg):
    """Multiply-add FLOPs (x2) of one token through the biLM."""
    cnn = sum(
        2
        * (cfg.max_characters_per_token - w + 1)
        * w
        * cfg.char_embedding_dim
        * n
        for w, n in cfg.filters
    )
    f = cfg.num_filters
    highway = cfg.num_highway_layers * 2 * 2 * f * f
    projection = 2 * f * cfg.projection_dim
    h, p = cfg.lstm_units, cfg.projection_dim
    lstm = 2 * cfg.num_layers * (2 * (2 * p) * 4 * h + 2 * h * p)
    return cnn + highway + projection + lstm


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--presets", default="tiny,small,original")
    parser.add_argument("--batches", default="64x20,1x20")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras

    import keras_elmo

    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    print(f"threads={args.threads} runs={args.runs} (median)")
    for name in args.presets.split(","):
        cfg = keras_elmo.BiLMConfig.from_preset(name)
        keras.utils.set_random_seed(0)
        bilm = keras_elmo.BiLM(cfg)
        run = tf.function(lambda ids: bilm(ids)["lstm_outputs2"])
        per_token = flops_per_token(cfg)
        for shape in args.batches.split(","):
            batch, steps = (int(v) for v in shape.split("x"))
            sentences = [
                [
                    "".join(rng.choice(letters, rng.integers(2, 9)))
                    for _ in range(steps)
                ]
                for _ in range(batch)
            ]
            ids = tf.constant(keras_elmo.batch_to_ids(sentences))
            run(ids).numpy()  # warm-up and trace
            times = []
            for _ in range(args.runs):
                start = time.perf_counter()
                run(ids).numpy()
                times.append(time.perf_counter() - start)
            seconds = statistics.median(times)
            tokens = batch * steps
            print(
                f"{name:>9} {batch:>3}x{steps:<3} {tokens / seconds:10.1f} "
                f"tokens/s  {seconds * 1e3:8.1f} ms/batch  "
                f"{per_token * tokens / seconds / 1e9:6.1f} GFLOP/s  "
                f"({per_token / 1e6:.1f} MFLOP/token)"
            )
    # The matmul reference, same process: the LSTM's input-gate shape.
    cfg = keras_elmo.BiLMConfig.from_preset("original")
    m, k, n = 64, 2 * cfg.projection_dim, 4 * cfg.lstm_units
    a = tf.random.normal((m, k))
    b = tf.random.normal((k, n))
    mm = tf.function(lambda a, b: tf.matmul(a, b))
    mm(a, b).numpy()
    times = []
    for _ in range(max(args.runs, 20)):
        start = time.perf_counter()
        mm(a, b).numpy()
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    print(f"matmul {m}x{k}x{n}: {2 * m * k * n / seconds / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
