"""Train with bilm-tf's own trainer (simple_elmo 0.9.2's `training.py`).

Run in the simple_elmo side venv (tools/simple_elmo_ref/setup_simple_elmo.sh),
never in keras_elmo's:

    ~/.cache/keras_elmo_side/simple_elmo/bin/python \\
        tools/simple_elmo_ref/train_bilm_tf.py --options OPTIONS.json \\
        --vocab VOCAB --train 'GLOB' --out SAVE_DIR --steps 100 \\
        [--seed 1] [--threads 2] [--report REPORT.json]

`OPTIONS.json` is bilm-tf's training options (the `options.json` that
`keras-elmo convert --from-bilm-tf-checkpoint` reads back; this script
sets `n_epochs` = 1 and `n_train_tokens` = steps x batch x unroll so
that `train()` runs exactly `--steps` batches and saves
`SAVE_DIR/model.ckpt-STEPS`). The data is bilm-tf's own
`BidirectionalLMDataset(..., shuffle_on_load=True)`: each of the
`batch_size` rows is an endless stream of `<S> sentence </S>`, cut into
windows of `unroll_steps`, the LSTM states carried from one window to
the next, exactly as bilm-tf trains.

bilm-tf seeds nothing: its shuffles use `random`, its graph TensorFlow's
global seed. `--seed` seeds all three (`random`, NumPy,
`tf.compat.v1.set_random_seed`), so a rerun is the same run.

The report (JSON) holds the wall time of every step, measured when the
trainer asks for its next batch (so a step's time includes preparing
its batch, as it does for `keras-elmo train`), the start-up time, and
the tokens each step predicts per direction (batch x unroll).
"""

import argparse
import json
import os
import random
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--options", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--train", required=True, help="Files glob.")
    parser.add_argument("--out", required=True, help="Checkpoint folder.")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--report", help="JSON file for the step times.")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    tf.compat.v1.disable_v2_behavior()
    random.seed(args.seed)
    np.random.seed(args.seed)
    tf.compat.v1.set_random_seed(args.seed)
    _limit_threads(args.threads)

    from simple_elmo import training
    from simple_elmo.data import BidirectionalLMDataset
    from simple_elmo.data import UnicodeCharsVocabulary

    with open(args.options, encoding="utf-8") as f:
        options = json.load(f)
    tokens_per_step = options["batch_size"] * options["unroll_steps"]
    options["n_epochs"] = 1
    options["n_train_tokens"] = args.steps * tokens_per_step
    max_chars = options["char_cnn"]["max_characters_per_token"]
    vocab = UnicodeCharsVocabulary(args.vocab, max_chars)
    data = BidirectionalLMDataset(
        args.train, vocab, test=False, shuffle_on_load=True
    )
    times = []
    data.iter_batches = _timed(data.iter_batches, times)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "options.json"), "w") as f:
        json.dump(options, f)
    logs = os.path.join(args.out, "logs")
    training.train(options, data, 1, args.out, logs)
    ended = time.perf_counter()
    # times[k] = when batch k+1 was asked for; the last step ends at the
    # checkpoint's save, which `ended` follows.
    steps = [b - a for a, b in zip(times, times[1:])]
    report = {
        "steps": args.steps,
        "step_seconds": steps,
        "startup_seconds": times[0] - started if times else None,
        "total_seconds": ended - started,
        "tokens_per_step_per_direction": tokens_per_step,
        "checkpoint": tf.train.latest_checkpoint(args.out),
    }
    if args.report:
        tmp = args.report + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report, f)
        os.replace(tmp, args.report)
    return 0


def _timed(iter_batches, times):
    """`iter_batches` that records `time.perf_counter()` at each request."""

    def wrapped(batch_size, num_steps):
        for batch in iter_batches(batch_size, num_steps):
            times.append(time.perf_counter())
            yield batch

    return wrapped


def _limit_threads(threads):
    """`train()` opens its own `Session(ConfigProto(allow_soft_placement=
    True))`; every ConfigProto it makes gets `threads` intra- and inter-op
    threads."""
    proto = tf.compat.v1.ConfigProto

    def limited(*args, **kwargs):
        kwargs.setdefault("intra_op_parallelism_threads", threads)
        kwargs.setdefault("inter_op_parallelism_threads", threads)
        return proto(*args, **kwargs)

    tf.compat.v1.ConfigProto = limited


if __name__ == "__main__":
    sys.exit(main())
