"""Trains (or fine-tunes) a biLM on your corpus, resumably.

    keras-elmo train --train 'data/train-*.txt.gz' --vocab vocab.txt \\
        --config small --out runs/small [--valid 'data/valid.txt.gz'] \\
        [--epochs 10] [--batch-size 128] [--strategy auto]

Rerunning the same command after a crash or a kill resumes from the last
checkpoint in OUT/checkpoints, mid-epoch, on the same batches. At the end,
OUT holds options.json + weights.hdf5 (AllenNLP format), softmax.hdf5,
vocab.txt and bilm.keras; OUT/logs holds TensorBoard summaries. An OUT
that holds a finished model but no checkpoint is not replaced without
`--force`; a corpus with no sentence (only blank or non-UTF-8 lines) is
an error, not an empty model.

Multi-worker: start the same command on every worker with TF_CONFIG set
(`--strategy multi_worker`, or `auto`). This uses keras_elmo's own loop,
which works where Keras 3's `fit` does not (keras-team/keras#20585).

Fine-tuning: `--init-from options.json weights.hdf5 [softmax.hdf5]`. With
no softmax file the softmax for the new vocabulary starts from random
weights: expect the first few hundred steps to be spent training it, with
a high loss, before the biLM itself adapts.
"""

import json
import sys

HELP = "Train or fine-tune a biLM (resumable, tf.distribute)."


def add_arguments(parser):
    parser.add_argument("--train", required=True, help="Training files glob.")
    parser.add_argument("--vocab", required=True, help="bilm-tf vocabulary.")
    parser.add_argument(
        "--config",
        default="small",
        help="Preset (tiny, small, medium, original) or options.json.",
    )
    parser.add_argument("--out", required=True, help="Output directory.")
    parser.add_argument("--valid", help="Validation files glob.")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument(
        "--batch-size", type=int, default=64, help="Global, in sentences."
    )
    parser.add_argument("--max-tokens", type=int, default=100)
    parser.add_argument("--steps-per-epoch", type=int)
    parser.add_argument("--optimizer", default="adagrad")
    parser.add_argument("--learning-rate", type=float, default=0.2)
    parser.add_argument(
        "--lr-decay",
        type=float,
        default=1.0,
        help="Multiply the learning rate by this once per epoch from "
        "--lr-decay-start on (1.0: constant).",
    )
    parser.add_argument(
        "--lr-decay-start",
        type=int,
        default=2,
        help="First epoch (1-based) trained at a decayed learning rate.",
    )
    parser.add_argument("--clip-norm", type=float, default=10.0)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument(
        "--num-sampled",
        type=int,
        default=0,
        help="Sampled-softmax negatives (0: full softmax).",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-every", type=int, default=500)
    parser.add_argument("--keep-checkpoints", type=int, default=3)
    parser.add_argument(
        "--strategy",
        default="auto",
        choices=["auto", "one_device", "mirrored", "multi_worker"],
    )
    parser.add_argument(
        "--mixed-precision", choices=["bfloat16", "float16"], default=None
    )
    parser.add_argument(
        "--init-from",
        nargs="+",
        metavar="FILE",
        help="options.json weights.hdf5 [softmax.hdf5] to fine-tune from.",
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="Enable TensorFlow op determinism (bit-reproducible runs).",
    )
    parser.add_argument(
        "--bucket-boundaries",
        help="Comma-separated sentence-length bucket edges, e.g. 10,20,40.",
    )
    parser.add_argument(
        "--shuffle-buffer",
        type=int,
        default=100_000,
        help="Sentences shuffled together (files are read in random order; "
        "use a buffer near the corpus size for files ordered by source).",
    )
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--quiet", action="store_true", help="No progress bar.")
    parser.add_argument(
        "--force",
        action="store_true",
        help="Train into an OUT that holds a finished model but no "
        "checkpoints (its files are replaced at the end).",
    )


def _check_out(out, force):
    """Refuses to replace a model in OUT that no checkpoint resumes."""
    import glob
    import os

    from keras_elmo.weights import model_files

    if force or not os.path.isdir(out):
        return
    if glob.glob(os.path.join(out, "checkpoints", "*.index")):
        return  # a resume: the same run finishes and rewrites its outputs
    existing = [
        os.path.basename(path)
        for path in model_files.model_paths(out).values()
        if os.path.exists(path)
    ]
    if existing:
        raise FileExistsError(
            f"Output `--out` {out!r} already holds {sorted(existing)} and no "
            "checkpoint to resume; pass --force to train and replace them."
        )


def _check_config(config):
    import os

    from keras_elmo.config import PRESETS

    if config not in PRESETS and not os.path.exists(config):
        raise ValueError(
            "Received an invalid value for `--config`, expected a preset "
            f"{sorted(PRESETS)} or an options.json path, got {config!r} "
            "(no such preset or file)."
        )


def _check_corpus(name, file_pattern):
    """Raises unless the corpus holds a sentence; reads up to the first."""
    from keras_elmo.data import corpus

    if file_pattern is None:
        return
    for _ in corpus.iter_sentences(file_pattern):
        return
    raise ValueError(
        f"`{name}` {file_pattern!r} holds no sentence to train on (only "
        "blank or non-UTF-8 lines), expected sentence-per-line text."
    )


def run(args):
    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.trainer import TrainingDiverged
    from keras_elmo.training.training_config import TrainingConfig

    if args.init_from and len(args.init_from) not in (2, 3):
        raise ValueError(
            "`--init-from` takes options.json weights.hdf5 [softmax.hdf5], "
            f"received {len(args.init_from)} files."
        )
    from keras_elmo.utils.validation import check_positive_int

    for flag in (
        "epochs",
        "batch_size",
        "max_tokens",
        "checkpoint_every",
        "lr_decay_start",
    ):
        check_positive_int("--" + flag.replace("_", "-"), getattr(args, flag))
    if not 0.0 < args.lr_decay <= 1.0:
        raise ValueError(
            "Received an invalid value for argument `--lr-decay`, expected "
            f"a factor in (0, 1], got {args.lr_decay!r}."
        )
    _check_config(args.config)
    _check_out(args.out, args.force)
    _check_corpus("--train", args.train)
    _check_corpus("--valid", args.valid)
    config = TrainingConfig(
        train=args.train,
        vocab=args.vocab,
        out_dir=args.out,
        model=args.config,
        valid=args.valid,
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_tokens=args.max_tokens,
        steps_per_epoch=args.steps_per_epoch,
        optimizer=args.optimizer,
        learning_rate=args.learning_rate,
        lr_decay=args.lr_decay,
        lr_decay_start=args.lr_decay_start,
        clip_norm=args.clip_norm,
        dropout=args.dropout,
        num_sampled=args.num_sampled,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
        keep_checkpoints=args.keep_checkpoints,
        strategy=args.strategy,
        mixed_precision=args.mixed_precision,
        init_from=tuple(args.init_from) if args.init_from else None,
        deterministic=args.deterministic,
        bucket_boundaries=(
            tuple(int(v) for v in args.bucket_boundaries.split(","))
            if args.bucket_boundaries
            else None
        ),
        shuffle_buffer=args.shuffle_buffer,
        log_every=args.log_every,
        verbose=not args.quiet,
    )
    trainer = Trainer(config)
    try:
        history = trainer.train()
    except TrainingDiverged as e:
        sys.stderr.write(f"keras-elmo train: error: {e}\n")
        return 3
    if trainer.chief:
        sys.stdout.write(json.dumps(history[-1] if history else {}) + "\n")
    return 0
