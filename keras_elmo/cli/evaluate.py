"""Full-softmax perplexity of a trained biLM on held-out text.

    keras-elmo evaluate --data 'test.txt.gz' --model runs/small [--json]
        [--stream] [--unigram-baseline 'train.txt.gz'] [--results FILE]

Reports forward and backward perplexity separately and their geometric
mean (the figure bilm-tf reports), the number of predictions per direction
(words + the sentence boundary) and the out-of-vocabulary rate. Each line
is scored on its own, from zero LSTM states; with `--stream` the lines
form one text and the states are carried from line to line (forward in
file order, backward in reverse), as bilm-tf's test and the published
Penn Treebank figures do: see `keras_elmo.training.stream_perplexity`.

`--data` is checked first against the model's vocabulary (its health
printed to stderr; UTF-16, binary, mostly non-UTF-8 or mostly
out-of-vocabulary files stop the command).

`--unigram-baseline TRAIN` also scores an add-one unigram model estimated
on TRAIN over the same predictions (the floor any LM must beat), and
`--results FILE` writes everything, with the command line, git commit,
machine, load and date, as JSON (atomically): the file a model card or
README quotes.
"""

import json
import sys

from keras_elmo.cli._corpus_args import add_corpus_check_arguments
from keras_elmo.cli._corpus_args import check_corpus_from_args

HELP = "Perplexity (forward, backward, mean) of a trained biLM."


def add_arguments(parser):
    parser.add_argument("--data", required=True, help="Files glob.")
    parser.add_argument(
        "--model",
        required=True,
        help="A model with its softmax and vocabulary: a `keras-elmo "
        "train` output dir, the shipped elmo_small_en, or any source "
        "holding options.json, weights.hdf5, softmax.hdf5 and vocab.txt.",
    )
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=100)
    parser.add_argument(
        "--json", action="store_true", help="Print one JSON line."
    )
    parser.add_argument(
        "--stream",
        action="store_true",
        help="Carry LSTM states across lines; --batch-size parts of the "
        "text then run side by side.",
    )
    parser.add_argument(
        "--unigram-baseline",
        metavar="TRAIN",
        help="Training files glob: also report the perplexity of an "
        "add-one unigram model estimated on them, on the same predictions.",
    )
    parser.add_argument(
        "--results",
        metavar="FILE",
        help="Write the figures with their provenance to this JSON file.",
    )
    add_corpus_check_arguments(parser)


def run(args):
    from keras_elmo.models.language_model import load_language_model
    from keras_elmo.training.evaluate import evaluate_model
    from keras_elmo.utils import check_positive_int

    # Checked before the model loads, under the names the user typed.
    check_positive_int("--batch-size", args.batch_size)
    check_positive_int("--max-tokens", args.max_tokens)
    try:
        model, vocabulary = load_language_model(args.model)
    except (ValueError, FileNotFoundError) as e:
        raise type(e)(f"`--model`: {e}") from None
    check_corpus_from_args(
        args,
        "--data",
        args.data,
        vocabulary,
        max_tokens=args.max_tokens,
        require_sentences=False,
    )
    if args.stream:
        from keras_elmo.training.stream_evaluate import stream_perplexity

        result = stream_perplexity(
            model, vocabulary, args.data, args.batch_size, args.max_tokens
        )
    else:
        result = evaluate_model(
            model, vocabulary, args.data, args.batch_size, args.max_tokens
        )
    if args.unigram_baseline:
        from keras_elmo.training.evaluate import unigram_perplexity

        unigram = unigram_perplexity(
            args.unigram_baseline,
            args.data,
            vocabulary,
            max_tokens=args.max_tokens,
        )
        result["unigram_perplexity"] = unigram
        result["ratio_to_unigram"] = result["perplexity"] / unigram
    if args.results:
        from keras_elmo.utils.provenance import provenance
        from keras_elmo.utils.provenance import write_json

        write_json(
            args.results,
            {
                "provenance": provenance(
                    "keras-elmo " + " ".join(sys.argv[1:])
                ),
                "data": args.data,
                "model": args.model,
                "protocol": "stream" if args.stream else "lines",
                "result": result,
            },
        )
    if args.json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        sys.stdout.write(
            f"forward perplexity  {result['forward_perplexity']:.2f}\n"
            f"backward perplexity {result['backward_perplexity']:.2f}\n"
            f"mean perplexity     {result['perplexity']:.2f}\n"
            f"tokens              {result['tokens']}\n"
            f"OOV rate            {result['oov_rate']:.4f}\n"
        )
        if "unigram_perplexity" in result:
            sys.stdout.write(
                f"add-one unigram     {result['unigram_perplexity']:.2f} "
                f"(mean / unigram {result['ratio_to_unigram']:.3f})\n"
            )
    return 0
