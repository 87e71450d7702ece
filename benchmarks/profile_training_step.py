"""Where a training step's time goes on real text, part by part.

    python benchmarks/profile_training_step.py --text FILE [--preset small]
        [--lines 128] [--workload file] [--runs 3] [--results OUT]

The batches of `training_throughput.py --text` (real sentences, natural
lengths, random target ids at the real positions; `--workload file` or
`sorted`), and the step `Trainer` runs. Each part runs forward and
backward (gradients of its own weights and of its input) on the inputs
it sees inside the step, as its own traced function:

- `token_layer`: char-CNN, highway and projection over the distinct
  tokens of each batch (`<S>`/`</S>` included), a sum-of-squares loss;
- `bilstm`: `ResidualBiLSTM` (packed) over `[B, T + 2, P]` random states
  with the batch's mask, a sum-of-squares loss;
- `softmax`: both directions' sampled softmax (`direction_loss_sum`,
  8192 candidates) on random `[B, T + 1, P]` states;
- `optimizer`: the clip (`clipped_gradients`) and the Adagrad update of
  every weight, on fixed random gradients: the softmax's as rows (at
  `2 x (B x (T + 1) + num_sampled)` random rows, as in the step, which
  `SparseAdagrad` updates row by row), the others dense;
- `step`: the whole training step (`training_throughput`'s).

The parts run in turns pass by pass; each figure is the median over
`--runs` passes of the seconds summed over the batches. `rest` = step -
sum of parts: what the parts leave out (gathers, masks, dropout, the
cross-entropy's inputs) plus what running them apart costs or saves.
Written to `--results` with provenance.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PARTS = ("token_layer", "bilstm", "softmax", "optimizer", "step")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--text", required=True)
    parser.add_argument("--preset", default="small")
    parser.add_argument("--lines", type=int, default=128)
    parser.add_argument("--workload", default="file")
    parser.add_argument("--vocabulary", type=int, default=50000)
    parser.add_argument("--num-sampled", type=int, default=8192)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--results", help="write the figures here too")
    args = parser.parse_args(argv)

    import tensorflow as tf
    from tf_threads import set_threads

    set_threads(tf, args.threads)
    import provenance
    import training_throughput

    import keras_elmo

    setup = training_throughput.training_setup(args)
    description, feeds = training_throughput.text_feeds(
        args, args.workload, tf, keras_elmo
    )
    parts = part_functions(setup, feeds, args, tf)
    for name in PARTS:  # trace, warm up
        parts[name](0)
    seconds = {name: [] for name in PARTS}
    for run in range(args.runs):
        for name in PARTS:
            start = time.perf_counter()
            parts[name]((run + 1) * len(feeds))
            seconds[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(seconds[name]) for name in PARTS}
    rest = medians["step"] - sum(medians[n] for n in PARTS[:-1])
    figures = {
        name: {
            "seconds_median": round(medians[name], 4),
            "seconds_per_pass": [round(s, 4) for s in seconds[name]],
            "share_of_step": round(medians[name] / medians["step"], 4),
        }
        for name in PARTS
    }
    figures["rest"] = {
        "seconds_median": round(rest, 4),
        "share_of_step": round(rest / medians["step"], 4),
    }
    for name, entry in figures.items():
        print(
            f"{name:>12} {entry['seconds_median']:7.3f} s "
            f"{entry['share_of_step']:6.1%} of the step",
            flush=True,
        )
    if args.results:
        provenance.write_json(
            args.results,
            {
                "provenance": provenance.provenance(),
                "what": "seconds per pass over the real-text batches of "
                "each part of the training step, forward and backward",
                "preset": args.preset,
                "text": args.text,
                "workload_name": args.workload,
                "workload": description,
                "tokens_per_s": round(
                    description["tokens"] / medians["step"], 1
                ),
                "parts": figures,
            },
        )


def part_functions(setup, feeds, args, tf):
    """`{part: run(offset)}`: one pass of the part over every batch."""
    import training_throughput

    from keras_elmo.layers.sentence_boundaries import AddSentenceBoundaries
    from keras_elmo.layers.unique_tokens import UniqueTokens
    from keras_elmo.training.fused_loss import direction_loss_sum
    from keras_elmo.training.steps import clipped_gradients

    model, optimizer = setup["model"], setup["optimizer"]
    variables = model.trainable_variables
    backbone = model.backbone
    bilstm = backbone.get_layer("bilstm")
    dim = backbone.config.projection_dim
    token_weights = [
        v
        for v in backbone.trainable_variables
        if not v.path.startswith("bilstm")
    ]
    distinct = [
        UniqueTokens()(AddSentenceBoundaries()(ids))[0] for ids, _ in feeds
    ]
    lstm_inputs = training_throughput.bilstm_feeds(feeds, bilstm, tf)
    states = [
        tf.random.stateless_normal(
            (int(t.shape[0]), int(t.shape[1]), dim), seed=(1, i)
        )
        for i, (_, t) in enumerate(feeds)
    ]
    # The step's softmax gradients are rows: both directions' labels and
    # candidates (`IndexedSlices`, updated row by row by SparseAdagrad).
    softmax_vars = {id(v) for v in model.softmax.trainable_variables}
    labels = int(feeds[0][1].shape[0]) * int(feeds[0][1].shape[1])
    rows = tf.random.stateless_uniform(
        (2 * (labels + args.num_sampled),),
        (3, 0),
        maxval=int(model.softmax.vocabulary_size),
        dtype=tf.int32,
    )

    def fixed_grad(i, v):
        if id(v) not in softmax_vars:
            return tf.random.stateless_normal(v.shape, seed=(2, i)) * 1e-3
        shape = (int(rows.shape[0]),) + tuple(v.shape[1:])
        values = tf.random.stateless_normal(shape, seed=(2, i)) * 1e-3
        return tf.IndexedSlices(values, rows, tf.constant(v.shape))

    fixed_grads = [fixed_grad(i, v) for i, v in enumerate(variables)]

    def sum_of_squares_grads(fn, inputs, weights):
        float_input = inputs.dtype.is_floating
        sources = ([inputs] if float_input else []) + weights
        with tf.GradientTape() as tape:
            if float_input:
                tape.watch(inputs)
            outputs = tf.nest.flatten(fn(inputs))
            loss = tf.add_n([tf.reduce_sum(tf.square(o)) for o in outputs])
        grads = tape.gradient(loss, sources)
        return tf.add_n(
            [tf.reduce_sum(tf.convert_to_tensor(g)[:1]) for g in grads]
        )

    @tf.function
    def token_layer(unique):
        return sum_of_squares_grads(
            lambda x: backbone.embed_tokens(x), unique, token_weights
        )

    @tf.function
    def lstm(inputs, mask):
        return sum_of_squares_grads(
            lambda x: bilstm(x, mask=mask, training=True),
            inputs,
            bilstm.trainable_variables,
        )

    @tf.function
    def softmax(hidden, targets, step):
        with tf.GradientTape() as tape:
            tape.watch(hidden)
            loss = 0.0
            for k in range(2):
                total, count = direction_loss_sum(
                    model.softmax,
                    hidden,
                    targets,
                    num_sampled=args.num_sampled,
                    seed=tf.stack([tf.constant(0, tf.int64), step * 2 + k]),
                    training=True,
                )
                loss += total / count
        grads = tape.gradient(
            loss, [hidden] + model.softmax.trainable_variables
        )
        return tf.add_n(
            [tf.reduce_sum(tf.convert_to_tensor(g)[:1]) for g in grads]
        )

    @tf.function
    def update(grads):
        grads, norm, _ = clipped_gradients(grads, 10.0)
        optimizer.apply_gradients(zip(grads, variables))
        return norm

    step = tf.function(setup["make_train_step"]())

    def each_batch(fn):
        def run(offset):
            for i in range(len(feeds)):
                fn(i, tf.constant(offset + i, tf.int64)).numpy()

        return run

    return {
        "token_layer": each_batch(lambda i, _: token_layer(distinct[i])),
        "bilstm": each_batch(lambda i, _: lstm(*lstm_inputs[i])),
        "softmax": each_batch(lambda i, s: softmax(states[i], feeds[i][1], s)),
        "optimizer": each_batch(lambda i, _: update(fixed_grads)),
        "step": each_batch(lambda i, s: step(feeds[i][0], feeds[i][1], s)),
    }


if __name__ == "__main__":
    main()
