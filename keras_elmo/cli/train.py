"""Trains (or fine-tunes) a biLM on your corpus, resumably.

    keras-elmo train --train 'data/train-*.txt.gz' --vocab vocab.txt \\
        --out runs/small [--architecture 2x1024_128_512cnn_1xhighway] \\
        [--valid 'data/valid.txt.gz'] \\
        [--epochs 10] [--batch-size 128] [--strategy auto]

Rerunning the same command after a crash or a kill resumes from the last
checkpoint in OUT/checkpoints, mid-epoch, on the same batches; a resume
with another corpus (by content), vocabulary, architecture, setting or
keras_elmo version than OUT/run.json records is refused, naming what
changed (`--force` starts over). At the end,
OUT holds options.json + weights.hdf5 (AllenNLP format), softmax.hdf5,
vocab.txt and bilm.keras; OUT/logs holds TensorBoard summaries. An OUT
that holds a finished model but no checkpoint is not replaced without
`--force`. Rerunning a finished run (same OUT, same `--epochs`) says so
in one line and changes nothing; a larger `--epochs` continues it (where
its optimizer state was kept) and `--force` starts over. `--config` is
the old name of `--architecture`. A finished run drops its optimizer's state (as
large as the model again, twice for Adam) from OUT/checkpoints, keeping
its weights and position: a larger `--epochs` then is refused, naming
`--force` and `--init-from`; `--keep-optimizer-state` keeps it, for a
run to be continued. Ctrl-C stops with one line naming the checkpoint
kept (exit status 130); rerunning the same command resumes. A corpus
with no sentence (only blank or non-UTF-8 lines) is an error, not an
empty model.

Before training, every corpus file is scanned and its health printed to
stderr (lines read and skipped, and why; tokens; OOV rate); a file that
is UTF-16, binary, mostly not UTF-8 or mostly out of the vocabulary stops
the run with an error naming it (see the "corpus check" flags).

Multi-worker: start the same command on every worker with TF_CONFIG set
(`--strategy multi_worker`, or `auto`). This uses keras_elmo's own loop,
which works where Keras 3's `fit` does not (keras-team/keras#20585).

On JAX or PyTorch (`KERAS_BACKEND=jax` / `torch`) the same command runs
the backend-neutral trainer (`keras_elmo.training.neutral_trainer`): one
process (on JAX with `keras.distribution.DataParallel` over several
local devices; PyTorch trains on one device), the default recipe, full
or sampled softmax with replacement, resumable from OUT/checkpoints
(the same files as on TensorFlow), with the same `--valid` (perplexity,
plateau, early stopping, best epoch) and `--init-from`. Flags that need
TensorFlow (`--strategy mirrored` / `multi_worker`, `--mixed-precision`,
`--sampler unique` with `--num-sampled`) are refused by name
(docs/BACKENDS.md).

Fine-tuning: `--init-from SOURCE`, any model `embed --preset` takes (a
preset name, folder, .zip or URL of a bilm-tf / AllenNLP-format model), or
`--init-from options.json weights.hdf5 [softmax.hdf5]`. A softmax beside
a source's weights is used when the source's vocab.txt is the run's
`--vocab`; otherwise the softmax for the new vocabulary starts from random
weights: expect the first few hundred steps to be spent training it, with
a high loss, before the biLM itself adapts.
"""

import io
import json
import sys

from keras_elmo.cli._corpus_args import add_corpus_check_arguments
from keras_elmo.cli._corpus_args import check_corpus_from_args

HELP = "Train or fine-tune a biLM (resumable; tf.distribute or JAX)."
DEST = "config_"
# `TrainingConfig` fields whose flag is not their name (`main` also maps
# the library's messages through these).
FLAG_ALIASES = {
    "out_dir": "--out",
    "model": "--architecture",
    "verbose": "--quiet",
}
# Old flags still accepted, with a line saying the new one.
DEPRECATED_FLAGS = {"--config": "--architecture"}


def flag_of(field_name):
    """The flag of a `TrainingConfig` field."""
    return FLAG_ALIASES.get(field_name) or "--" + field_name.replace("_", "-")


def _training_config_class():
    """`TrainingConfig`, for building the parser: where TensorFlow is not
    loaded yet, a copy of `keras_elmo/training/training_config.py` (plain
    dataclasses) loaded on its own, because `keras_elmo.training`'s
    `__init__` imports TensorFlow and `keras-elmo train --help` must not.
    Only its fields are read; `run` uses the library's own class."""
    import importlib.util
    import os
    import sys

    if "tensorflow" in sys.modules or "keras_elmo.training" in sys.modules:
        from keras_elmo.training.training_config import TrainingConfig

        return TrainingConfig
    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        "training",
        "training_config.py",
    )
    spec = importlib.util.spec_from_file_location(
        "_keras_elmo_training_config_fields", path
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TrainingConfig


def add_arguments(parser):
    """One flag per `TrainingConfig` field (its metadata: help, argparse
    options), plus `--force`."""
    import dataclasses
    import re

    fields = dataclasses.fields(_training_config_class())
    names = {field.name for field in fields}

    def in_flags(text):
        return re.sub(
            r"`(\w+)`",
            lambda m: (
                flag_of(m.group(1)) if m.group(1) in names else m.group(0)
            ),
            text,
        )

    for field in fields:
        options = dict(field.metadata["argparse"])
        options.setdefault("help", in_flags(field.metadata["help"]))
        if field.default is dataclasses.MISSING:
            options["required"] = True
        else:
            options["default"] = field.default
        if "action" not in options:
            options.setdefault("type", field.type)
            options.setdefault("metavar", field.name.upper())
        # A prefix keeps these apart from the global flags (`-v` sets
        # `verbose`, which `--quiet` would otherwise overwrite).
        flags = [flag_of(field.name)]
        flags += [old for old, new in DEPRECATED_FLAGS.items() if new in flags]
        if len(flags) > 1:
            options["action"] = _deprecated_alias(options.get("action"))
        parser.add_argument(*flags, dest=DEST + field.name, **options)
    parser.add_argument(
        "--force",
        action="store_true",
        help="Start over: discard the checkpoints, history and logs in OUT "
        "(needed where OUT's checkpoints come from another run: other "
        "settings, corpus, vocabulary or version), or train into an OUT "
        "that holds a finished model (its files are replaced at the end).",
    )
    add_corpus_check_arguments(parser)


def _deprecated_alias(action):
    """An argparse action storing the value that, given under an old
    flag (`DEPRECATED_FLAGS`), says on stderr which flag replaces it."""
    import argparse

    assert action is None  # a store action: the flags that have an alias

    class Store(argparse._StoreAction):
        def __call__(self, parser, namespace, values, option_string=None):
            if option_string in DEPRECATED_FLAGS:
                sys.stderr.write(
                    f"keras-elmo train: {option_string} is deprecated; use "
                    f"{DEPRECATED_FLAGS[option_string]} (the same values).\n"
                )
            super().__call__(parser, namespace, values, option_string)

    return Store


def _check_out(out, force, backend="tensorflow"):
    """Refuses to replace a model in OUT that no checkpoint resumes."""
    import glob
    import os

    from keras_elmo.weights import hdf5 as model_files

    if force or not os.path.isdir(out):
        return
    # The checkpoints a trainer resumes (one format on every backend).
    if glob.glob(os.path.join(glob.escape(out), "checkpoints", "*.index")):
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

    from keras_elmo.config.bilm_config import ARCHITECTURES
    from keras_elmo.config.bilm_config import NAMED_ARCHITECTURES

    names = sorted(NAMED_ARCHITECTURES) + sorted(ARCHITECTURES)
    if config not in names and not os.path.exists(config):
        raise ValueError(
            "Received an invalid value for `--architecture`, expected a "
            f"name {names} or an options.json path, got {config!r} (no "
            "such name or file)."
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


def _check_corpus_health(args, config, stream=None):
    """The corpus check of `--train` and `--valid` (summary on `stream`,
    stderr by default)."""
    from keras_elmo.data.vocabulary import Vocabulary

    vocabulary = Vocabulary.load(config.vocab)
    for name, pattern in (("--train", config.train), ("--valid", config.valid)):
        check_corpus_from_args(
            args,
            name,
            pattern,
            vocabulary,
            max_tokens=config.max_tokens,
            stream=stream,
        )


def run(args):
    import dataclasses

    import keras

    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.trainer import TrainingDiverged
    from keras_elmo.training.training_config import TrainingConfig
    from keras_elmo.training.training_config import check_training_backend
    from keras_elmo.utils.atomic import interrupted

    config = TrainingConfig(
        **{
            f.name: getattr(args, DEST + f.name)
            for f in dataclasses.fields(TrainingConfig)
        }
    )
    backend = keras.config.backend()
    check_training_backend(config, backend)
    _check_config(config.model)
    _check_out(config.out_dir, args.force, backend)
    # The corpus summary is held back until it is known that the run has
    # work to do: a finished run says so in one line.
    summary, trainer = io.StringIO(), None
    try:
        if args.skip_corpus_check:
            _check_corpus("--train", config.train)
            _check_corpus("--valid", config.valid)
        else:
            _check_corpus_health(args, config, summary)
        if backend == "tensorflow":
            trainer = Trainer(config, force=args.force)
            chief = trainer.chief
        else:
            from keras_elmo.training.neutral_trainer import NeutralTrainer

            trainer, chief = NeutralTrainer(config, force=args.force), True
    finally:
        if trainer is None or not trainer.finished:
            sys.stderr.write(summary.getvalue())
    if trainer.finished:
        if chief:
            epochs = len(trainer.history.entries)
            longer = (
                "a larger --epochs continues it"
                if not trainer._store().optimizer_dropped
                else "its optimizer state was not kept, so a larger "
                "--epochs cannot continue it"
            )
            sys.stderr.write(
                f"keras-elmo train: {config.out_dir} already holds the "
                f"finished model of this run ({epochs} epoch"
                f"{'' if epochs == 1 else 's'}); nothing to do ({longer}; "
                "--force starts over).\n"
            )
        return 0
    try:
        with interrupted(lambda: _kept_after_interrupt(config.out_dir)):
            history = trainer.train()
    except TrainingDiverged as e:
        sys.stderr.write(f"keras-elmo train: error: {e}\n")
        return 3
    if chief:
        if config.verbose:
            # Keras' bar (on stdout) leaves its last line open.
            sys.stdout.write("\n")
        sys.stdout.write(json.dumps(history[-1] if history else {}) + "\n")
        sys.stdout.flush()
        sys.stderr.write(closing_line(config.out_dir))
    return 0


def closing_line(out):
    """The last line of a finished run: where the model is and the
    command that embeds with it."""
    import shlex

    return (
        f"keras-elmo train: the model is in {out} (options.json, "
        "weights.hdf5, bilm.keras); embed with it: keras-elmo embed "
        f"sentences.txt vectors.hdf5 --model {shlex.quote(out)}\n"
    )


def _kept_after_interrupt(out):
    """What an interrupted `train` kept, and how to go on."""
    import glob
    import os
    import re

    found = []
    for path in glob.glob(os.path.join(glob.escape(out), "checkpoints", "*")):
        match = re.fullmatch(
            r"ckpt-(\d+)(\.index|\.npz)", os.path.basename(path)
        )
        if match:
            found.append(int(match.group(1)))
    if not found:
        return (
            f"no checkpoint was written to {out}/checkpoints yet; rerun the "
            "same command to start again"
        )
    return (
        f"the checkpoint of step {max(found):,} is kept in {out}/checkpoints;"
        " rerun the same command to resume from it"
    )
