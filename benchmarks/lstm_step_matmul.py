"""One recurrent step's matmuls: a batched matmul vs one matmul per direction.

    python benchmarks/lstm_step_matmul.py [--threads 2] [--steps 50]

`lstm_recurrence` multiplies the `[2, B, M]` states of both directions by
their `[2, M, N]` kernels every step. This times, inside a compiled
`tf.while_loop` of `--steps` iterations (per-iteration microseconds,
median of 5), the batched matmul against two plain 2-D matmuls stacked,
for the recurrent (`P x 4H`) and projection (`H x P`) kernels of the
shipped `elmo_small_en` (P 128, H 1024) and of `original` (P 512, H 4096),
at batch 1 (latency) and 64 (throughput).
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHAPES = [(1, 128, 1024), (64, 128, 1024), (1, 512, 4096), (64, 512, 4096)]


def per_iteration_us(tf, product, steps):
    """Median microseconds of one `product()` inside a while loop."""

    @tf.function
    def run():
        def body(t, acc):
            return t + 1, acc + product()[..., :1] * 0.0

        initial = tf.zeros_like(product()[..., :1])
        return tf.while_loop(lambda t, _: t < steps, body, (0, initial))[1]

    run()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        run().numpy()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / steps * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    print(f"threads={args.threads}, load {os.getloadavg()[0]:.1f}")
    for batch, proj, units in SHAPES:
        for name, m, n in (
            ("recurrent", proj, 4 * units),
            ("projection", units, proj),
        ):
            x = tf.random.normal((2, batch, m))
            w = tf.random.normal((2, m, n))
            batched = per_iteration_us(tf, lambda: tf.matmul(x, w), args.steps)
            split = per_iteration_us(
                tf,
                lambda: tf.stack(
                    [tf.matmul(x[0], w[0]), tf.matmul(x[1], w[1])]
                ),
                args.steps,
            )
            print(
                f"B={batch:<3} {name:>10} {m:>5} x {n:<6} batched "
                f"{batched:9.1f} us   per direction {split:9.1f} us   "
                f"x{batched / split:4.2f}"
            )


if __name__ == "__main__":
    main()
