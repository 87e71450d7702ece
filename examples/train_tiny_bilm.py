"""Train a tiny biLM with the project trainer and report its perplexity.

Builds a vocabulary of the training files, trains the `tiny` architecture
(or `--model`) with `keras_elmo.training.Trainer` (what `keras-elmo
train` runs), then evaluates forward, backward and mean full-softmax
perplexity on `--valid` next to an add-one unigram baseline on the same
predictions. The output directory holds `options.json`, `weights.hdf5`,
`softmax.hdf5`, `vocab.txt` and `bilm.keras` (load it with
`keras_elmo.BiLM.from_allennlp`).

python examples/train_tiny_bilm.py                   # ~1 min on 2 CPUs
python examples/train_tiny_bilm.py --train 'corpus/*.txt.gz' --epochs 5
"""

import argparse
import os
import tempfile

from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.training.evaluate import evaluate_model
from keras_elmo.training.evaluate import unigram_perplexity
from keras_elmo.training.trainer import Trainer
from keras_elmo.training.training_config import TrainingConfig

DATA = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data"
)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--train", default=os.path.join(DATA, "en_pd_lm_sample.txt.gz")
    )
    parser.add_argument(
        "--valid", default=os.path.join(DATA, "en_pd_lm_valid_sample.txt.gz")
    )
    parser.add_argument(
        "--out", default=None, help="Output directory (default: a temp dir)."
    )
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--steps-per-epoch",
        type=int,
        default=None,
        help="Cap the steps of an epoch (default: the whole data).",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    out = args.out or tempfile.mkdtemp(prefix="tiny_bilm_")
    os.makedirs(out, exist_ok=True)
    vocab_path = os.path.join(out, "train_vocab.txt")
    vocabulary = Vocabulary.build(args.train, min_count=args.min_count)
    vocabulary.save(vocab_path)
    print(f"vocabulary: {len(vocabulary)} words (min count {args.min_count})")

    config = TrainingConfig(
        train=args.train,
        vocab=vocab_path,
        out_dir=out,
        model=args.model,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        batch_size=args.batch_size,
        optimizer="adam",
        learning_rate=args.learning_rate,
        seed=args.seed,
        verbose=False,
    )
    trainer = Trainer(config)
    history = trainer.train()
    for entry in history:
        print(f"epoch {entry['epoch']}: train loss {entry['loss']:.3f}")
    result = evaluate_model(trainer.model, vocabulary, args.valid)
    result["unigram_perplexity"] = unigram_perplexity(
        args.train, args.valid, vocabulary
    )
    result["history"] = history
    result["out"] = out
    print(
        f"valid perplexity: forward {result['forward_perplexity']:.1f}, "
        f"backward {result['backward_perplexity']:.1f}, "
        f"mean {result['perplexity']:.1f} "
        f"(add-one unigram {result['unigram_perplexity']:.1f}); "
        f"{result['tokens']} predictions per direction"
    )
    print(f"model written to {out}")
    return result


if __name__ == "__main__":
    main()
