"""Penn Treebank perplexity of a small char-CNN biLM, next to published ones.

    python benchmarks/ptb_perplexity.py [--out runs/ptb] [--epochs 12]
        [--sentences-per-line 4] [--lr-decay 0.6 --lr-decay-start 7]

Fetches PTB (benchmarks/fetch_ptb.py; never committed), builds the
vocabulary from ptb.train.txt (its 10k words, `<unk>` included), trains a
char-CNN biLM with `keras_elmo.training.Trainer` (resumable: rerun the same
command after an interruption) and prints one JSON line with forward,
backward and mean test perplexity, tokens, wall time and tokens/s.

Measured (benchmarks/RESULTS.md): forward test perplexity 98.1 as a
stream, 99.3 line by line, after 14 epochs of 4-sentence lines with
dropout lowered from 0.5 to 0.3, then 0.2 (0.5 underfits this model).

Published forward-LM test perplexities on the same splits: Kneser-Ney
5-gram 141.2 (Mikolov 2011); char-CNN LSTM small 92.3, large 78.9 (Kim et
al. 2016); LSTM medium 82.7, large 78.4 (Zaremba et al. 2014).

Those figures score the corpus as one stream (every word predicted from all
the text before it, one `<eos>` per sentence). A biLM trained sentence by
sentence has no context at a sentence's start, which costs perplexity on
PTB. `--sentences-per-line K` (default 1: sentence-level) joins each run
of K consecutive sentences of every split into one line, separated by
`</S>` (the vocabulary's end-of-sentence id; as input it gets the `</S>`
character ids): the predictions are the same words plus one end of
sentence each, as in the stream, and every sentence after a line's first
is predicted with the sentences before it as context. The test set is
scored both line by line (`evaluate_model`) and as one stream with the
LSTM states carried from line to line (`stream_perplexity`, 16 parts of
the test text side by side, each from zero states), which is the
published protocol.

The model (`PTB_OPTIONS`): Kim et al.'s small char-CNN (widths 1-6 with
25 x width filters, one highway layer) feeding ELMo's residual biLSTM with
2 layers of 512 cells projected to 256, full softmax over the 10k words.
"""

import argparse
import json
import os
import time

from fetch_ptb import DEFAULT_OUT
from fetch_ptb import fetch

HERE = os.path.dirname(os.path.abspath(__file__))

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=os.path.join(HERE, "data", "ptb_run"))
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--steps-per-epoch", type=int, default=None)
    parser.add_argument("--sentences-per-line", type=int, default=1)
    parser.add_argument("--lr-decay", type=float, default=1.0)
    parser.add_argument("--lr-decay-start", type=int, default=2)
    args = parser.parse_args(argv)

    from keras_elmo.data.vocabulary import Vocabulary
    from keras_elmo.training.evaluate import unigram_perplexity
    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.training_config import TrainingConfig

    fetch()
    split = {s: split_path(args.out, s, 1) for s in ("train", "valid", "test")}
    os.makedirs(args.out, exist_ok=True)
    vocab = os.path.join(args.out, "ptb_vocab.txt")
    if not os.path.exists(vocab):
        Vocabulary.build(split["train"]).save(vocab)
    if args.sentences_per_line > 1:
        split = {
            s: join_sentences(
                path,
                split_path(args.out, s, args.sentences_per_line),
                args.sentences_per_line,
            )
            for s, path in split.items()
        }
    options = os.path.join(args.out, "ptb_options.json")
    with open(options, "w") as f:
        json.dump(PTB_OPTIONS, f, indent=2)
    config = TrainingConfig(
        train=split["train"],
        valid=split["valid"],
        vocab=vocab,
        out_dir=args.out,
        max_tokens=100 * args.sentences_per_line,
        lr_decay=args.lr_decay,
        lr_decay_start=args.lr_decay_start,
        model=options,
        epochs=args.epochs,
        batch_size=args.batch_size,
        optimizer="adam",
        learning_rate=args.learning_rate,
        dropout=args.dropout,
        steps_per_epoch=args.steps_per_epoch,
        checkpoint_every=200,
        bucket_boundaries=tuple(
            b * args.sentences_per_line for b in (10, 20, 30, 40, 60)
        ),
    )
    start = time.perf_counter()
    trainer = Trainer(config)
    history = trainer.train()
    wall = time.perf_counter() - start
    max_tokens = config.max_tokens
    scores = score_both_ways(
        trainer.model, trainer.vocabulary, split["test"], max_tokens
    )
    result = dict(scores["lines"])
    result.update(
        {
            "stream": scores["stream"],
            "unigram_perplexity": unigram_perplexity(
                split["train"],
                split["test"],
                trainer.vocabulary,
                max_tokens=max_tokens,
            ),
            "epochs": args.epochs,
            "sentences_per_line": args.sentences_per_line,
            "wall_seconds_this_run": wall,
            "history": history,
        }
    )
    print(json.dumps(result))
    return result


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

    if os.path.exists(destination):
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
