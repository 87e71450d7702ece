"""float32 against bfloat16 matmuls at the biLM's shapes, on this CPU.

    python benchmarks/matmul_dtypes.py [--preset original] [--runs 20]
        [--threads 2] [--results benchmarks/results/matmul_dtypes.json]

Whether `dtype="mixed_bfloat16"` can be faster than float32 depends on
the CPU: bfloat16 matmuls outrun float32 ones only where the hardware
multiplies bfloat16 faster (AMX tiles, or AVX512-BF16 dot products that
oneDNN uses). For each matmul of the preset's forward pass (the LSTM's
input product over a 64 x 20 batch, its recurrent and projection
products for 64 rows, the highway layer over 1,000 distinct tokens),
`tf.matmul` in float32 and in bfloat16 are timed alternately, one call
each per round, median of `--runs` rounds after a warm-up; GFLOP/s =
2 m k n / seconds. Also records whether /proc/cpuinfo lists `amx_bf16`
and `avx512_bf16`. Written to `--results` with provenance.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def shapes(cfg):
    """`{name: (m, k, n)}` of the preset's main matmuls."""
    p, h, f = cfg.projection_dim, cfg.lstm_units, cfg.num_filters
    return {
        "lstm_input_64x20": (64 * 20, 2 * p, 4 * h),
        "lstm_recurrent_64": (64, p, 4 * h),
        "lstm_projection_64": (64, h, p),
        "highway_1000_tokens": (1000, f, 2 * f),
    }


def cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="original")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--results", help="write the figures here too")
    args = parser.parse_args(argv)

    import tensorflow as tf
    from tf_threads import set_threads

    set_threads(tf, args.threads)
    import provenance

    import keras_elmo

    cfg = keras_elmo.BiLMConfig.from_preset(args.preset)
    matmul = tf.function(tf.matmul)
    figures = {}
    for name, (m, k, n) in shapes(cfg).items():
        operands = {}
        for dtype in (tf.float32, tf.bfloat16):
            a = tf.cast(tf.random.stateless_normal((m, k), (0, 1)), dtype)
            b = tf.cast(tf.random.stateless_normal((k, n), (0, 2)), dtype)
            matmul(a, b).numpy()  # trace, warm up
            operands[dtype.name] = (a, b)
        seconds = {dtype: [] for dtype in operands}
        for _ in range(args.runs):
            for dtype, (a, b) in operands.items():
                start = time.perf_counter()
                matmul(a, b).numpy()
                seconds[dtype].append(time.perf_counter() - start)
        rate = {
            dtype: round(2 * m * k * n / statistics.median(s) / 1e9, 3)
            for dtype, s in seconds.items()
        }
        figures[name] = {
            "shape_mkn": [m, k, n],
            "gflop_per_s": rate,
            "bfloat16_over_float32": round(
                rate["bfloat16"] / rate["float32"], 3
            ),
        }
        print(
            f"{name:>22} {m}x{k}x{n}: float32 {rate['float32']:7.1f}, "
            f"bfloat16 {rate['bfloat16']:7.1f} GFLOP/s "
            f"({figures[name]['bfloat16_over_float32']:.2f}x)",
            flush=True,
        )
    flags = cpu_flags()
    if args.results:
        provenance.write_json(
            args.results,
            {
                "provenance": provenance.provenance(),
                "preset": args.preset,
                "threads": args.threads,
                "cpu_flags": {
                    flag: flag in flags for flag in ("amx_bf16", "avx512_bf16")
                },
                "matmuls": figures,
            },
        )


if __name__ == "__main__":
    main()
