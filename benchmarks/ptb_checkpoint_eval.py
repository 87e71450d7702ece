"""Scores a PTB run's latest checkpoint line by line and as a stream.

    python benchmarks/ptb_checkpoint_eval.py --out /work/runs/ptb/out
        [--split valid] [--sentences-per-line 4]

Restores the newest checkpoint of a `ptb_perplexity.py` run (in `--out`;
nothing is written), then prints one JSON line with `evaluate_model`
(every line from zero LSTM states) and `stream_perplexity` (states carried
from line to line, 16 parts side by side) on the `--split` file the run
uses. Lets a run in progress be scored both ways without stopping it.

Validation and training splits only: the test split is read once, by
`ptb_perplexity.py` at the end of its run, on the epoch its validation
rules chose (benchmarks/README.md, "Results discipline").
"""

import argparse
import json
import os
import time

from ptb_perplexity import PTB_OPTIONS
from ptb_perplexity import score_both_ways
from ptb_perplexity import split_path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--split", default="valid", choices=["valid", "train"])
    parser.add_argument("--sentences-per-line", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=2e-3)
    args = parser.parse_args(argv)

    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.training_config import TrainingConfig

    k = args.sentences_per_line
    data = split_path(args.out, args.split, k)
    options = os.path.join(args.out, "ptb_options.json")
    if not os.path.exists(options):
        raise FileNotFoundError(
            f"`--out` {args.out!r} holds no ptb_options.json "
            f"(expected a ptb_perplexity.py run; its model is {PTB_OPTIONS})."
        )
    config = TrainingConfig(
        train=data,
        vocab=os.path.join(args.out, "ptb_vocab.txt"),
        out_dir=args.out,
        model=options,
        max_tokens=100 * k,
        optimizer="adam",
        learning_rate=args.learning_rate,
        verbose=False,
    )
    # Reads the checkpoint (other data and settings than its run's).
    trainer = Trainer(config, verify_run=False)
    if not trainer.resumed_from:
        raise FileNotFoundError(f"`--out` {args.out!r} has no checkpoint.")
    start = time.perf_counter()
    result = {"checkpoint": trainer.resumed_from}
    result.update(
        score_both_ways(
            trainer.model, trainer.vocabulary, data, config.max_tokens
        )
    )
    result["seconds"] = time.perf_counter() - start
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
