"""Training-step cost: forward vs forward+backward of the biLM LM task.

    python benchmarks/lstm_training_step.py [--presets tiny,small]
        [--batch 32x25] [--vocabulary 5000] [--runs 5] [--threads 2]

Random weights (`BiLM(cfg, dropout=0.1)` + `BiLMLanguageModel`), char ids
of random words, random targets. Compiled `tf.function`s per preset:
`forward` (inference call, forward states only), `train` (training call,
full-softmax loss of both directions as in `keras_elmo.training`, and the
gradient of every trainable variable) and, for reference, `forward+loss`
(the training call and the loss, no gradient). Each is warmed up once,
then timed `--runs` times (median, results fetched to the host). Prints
the times and `ratio` = forward+backward / forward (the softmax loss is
in the numerator only); a second line times the `ResidualBiLSTM` alone
(loss: sum of squared outputs). Backward costs about 2x forward in FLOPs,
so ~3 is the floor of a ratio. The machine may be shared: compare ratios
measured in one run.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--presets", default="tiny,small")
    parser.add_argument("--batch", default="32x25")
    parser.add_argument("--vocabulary", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    import keras_elmo
    from keras_elmo.models.bilm_language_model import BiLMLanguageModel
    from keras_elmo.training.fused_loss import direction_loss_sum

    batch, steps = (int(v) for v in args.batch.split("x"))
    rng = np.random.default_rng(0)
    words = [
        [f"w{rng.integers(100)}" for _ in range(steps)] for _ in range(batch)
    ]
    ids = tf.constant(keras_elmo.batch_to_ids(words))
    targets = tf.constant(
        rng.integers(0, args.vocabulary, (batch, steps + 1)).astype("int32")
    )

    def timed(fn, *inputs):
        fn(*inputs)  # trace + warm-up
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            result = fn(*inputs)
            for value in tf.nest.flatten(result, expand_composites=True):
                value.numpy()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    print(
        f"batch={batch}x{steps} vocabulary={args.vocabulary} "
        f"threads={args.threads} runs={args.runs} (median seconds)"
    )
    for name in args.presets.split(","):
        cfg = keras_elmo.BiLMConfig.from_architecture(name)
        model = BiLMLanguageModel(
            keras_elmo.BiLM(cfg, dropout=0.1), args.vocabulary
        )
        variables = model.trainable_variables

        def loss_of(hidden):
            f_sum, f_count = direction_loss_sum(
                model.softmax, hidden["forward"], targets
            )
            b_sum, b_count = direction_loss_sum(
                model.softmax, hidden["backward"], targets
            )
            return (f_sum / f_count + b_sum / b_count) / 2

        @tf.function
        def forward(char_ids):
            return model(char_ids, training=False)["forward"]

        @tf.function
        def forward_loss(char_ids):
            return loss_of(model(char_ids, training=True))

        @tf.function
        def train(char_ids):
            with tf.GradientTape() as tape:
                loss = loss_of(model(char_ids, training=True))
            return tape.gradient(loss, variables)

        fwd = timed(forward, ids)
        step = timed(train, ids)
        with_loss = timed(forward_loss, ids)
        print(
            f"{name:8s} forward {fwd:.4f}  forward+backward {step:.4f}  "
            f"ratio {step / fwd:.2f}  (forward+loss {with_loss:.4f}, "
            f"backward/forward+loss {(step - with_loss) / with_loss:.2f})"
        )

        # The biLSTM alone, on the token embeddings' shape.
        bilstm = model.backbone.bilstm
        x = tf.random.stateless_normal(
            (batch, steps + 2, cfg.projection_dim), seed=(1, 2)
        )
        lstm_vars = bilstm.trainable_variables

        @tf.function
        def lstm_forward(x):
            return bilstm(x, training=False)

        @tf.function
        def lstm_train(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = sum(tf.reduce_sum(y * y) for y in bilstm(x))
            return tape.gradient(loss, [x] + lstm_vars)

        lstm_fwd = timed(lstm_forward, x)
        lstm_step = timed(lstm_train, x)
        print(
            f"{'':8s} biLSTM only: forward {lstm_fwd:.4f}  forward+backward "
            f"{lstm_step:.4f}  ratio {lstm_step / lstm_fwd:.2f}"
        )


if __name__ == "__main__":
    main()
