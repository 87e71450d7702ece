"""The Adagrad update of the softmax's weights: every row, or touched rows.

    python benchmarks/optimizer_update.py [--vocabulary 793471] [--dim 512]
        [--rows 21504] [--runs 5] [--threads 2] [--results OUT]

Under sampled softmax a training step's gradient of the softmax's
`[V, D]` weights has rows only at both directions' labels and candidates:
`2 x (B x T + num_sampled)` of them, 21,504 for bilm-tf's batch (128 x 20)
and 8,192 candidates, out of bilm-tf's `V = 793,471` words. Two updates of
the same `tf.IndexedSlices` gradient, each one traced `tf.function`:

- `dense`: the gradient made dense (`tf.convert_to_tensor`, what the
  trainer did before `SparseAdagrad`), then `keras.optimizers.Adagrad`:
  every one of the `V x D` weights and accumulators is read and written;
- `sparse`: `SparseAdagrad` (the trainer's `"adagrad"`): only the
  touched rows.

Both start from the same weights and accumulators (1.0, as bilm-tf) and
take the same gradients (fixed random rows with repeats, as candidates
drawn twice), alternating, `--runs` timed updates each after one warm-up;
the figure is the median seconds per update. After the runs, the largest
difference between the two sets of weights is recorded (the two updates
are the same maths). Written to `--results` with provenance.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vocabulary", type=int, default=793471)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--rows", type=int, default=21504)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--results", help="write the figures here too")
    args = parser.parse_args(argv)

    import keras
    import tensorflow as tf
    from tf_threads import set_threads

    set_threads(tf, args.threads)
    import provenance

    from keras_elmo.training.sparse_adagrad import SparseAdagrad

    shape = (args.vocabulary, args.dim)
    start = tf.random.stateless_normal(shape, (0, 1)) * 0.05
    weights = {name: keras.Variable(start) for name in ("dense", "sparse")}
    del start
    optimizers = {
        "dense": keras.optimizers.Adagrad(0.2, initial_accumulator_value=1.0),
        "sparse": SparseAdagrad(0.2, initial_accumulator_value=1.0),
    }
    for name, optimizer in optimizers.items():
        optimizer.build([weights[name]])

    def gradient(i):
        rows = tf.random.stateless_uniform(
            (args.rows,), (1, i), maxval=args.vocabulary, dtype=tf.int32
        )
        values = tf.random.stateless_normal((args.rows, args.dim), (2, i))
        return tf.IndexedSlices(values * 1e-2, rows, tf.constant(shape))

    @tf.function
    def dense_update(grad):
        grad = tf.convert_to_tensor(grad)
        optimizers["dense"].apply_gradients([(grad, weights["dense"])])

    @tf.function
    def sparse_update(grad):
        optimizers["sparse"].apply_gradients([(grad, weights["sparse"])])

    updates = {"dense": dense_update, "sparse": sparse_update}
    seconds = {name: [] for name in updates}
    for i in range(args.runs + 1):
        grad = gradient(i)
        for name, update in updates.items():
            begin = time.perf_counter()
            update(grad)
            tf.gather(weights[name].value, [0]).numpy()  # a row: synced
            if i:  # the first is the trace and warm-up
                seconds[name].append(time.perf_counter() - begin)
    medians = {name: statistics.median(s) for name, s in seconds.items()}
    difference = float(
        tf.reduce_max(tf.abs(weights["dense"].value - weights["sparse"].value))
    )
    ratio = medians["dense"] / medians["sparse"]
    print(
        f"V={args.vocabulary} D={args.dim}, {args.rows} rows a step: "
        f"dense {medians['dense'] * 1e3:.1f} ms, sparse "
        f"{medians['sparse'] * 1e3:.1f} ms a update ({ratio:.1f}x); "
        f"max |dense - sparse| = {difference:.3g}",
        flush=True,
    )
    if args.results:
        provenance.write_json(
            args.results,
            {
                "provenance": provenance.provenance(),
                "what": "seconds per Adagrad update of the softmax's [V, D] "
                "weights from a row gradient: dense (every row) against "
                "SparseAdagrad (touched rows)",
                "vocabulary": args.vocabulary,
                "dim": args.dim,
                "rows_per_step": args.rows,
                "threads": args.threads,
                "seconds": {
                    name: {
                        "median": round(medians[name], 5),
                        "per_update": [round(x, 5) for x in seconds[name]],
                    }
                    for name in seconds
                },
                "dense_over_sparse": round(ratio, 2),
                "max_abs_difference": difference,
            },
        )
    return medians, difference


if __name__ == "__main__":
    main()
