"""Lexical substitutes from the shipped biLM's two language models.

python examples/lexical_substitutes.py
python examples/lexical_substitutes.py --model MODEL_DIR --top-k 5 \\
    --sentence "The river bank was muddy ."

For each token, the words the forward LM expects there from the left
context and the backward LM from the right context, with their
log-probabilities (simple_elmo's `get_elmo_substitutes`). MODEL_DIR: the
shipped `elmo_small_en` (default) or any folder with options.json,
weights.hdf5, softmax.hdf5 and vocab.txt (a `keras-elmo train` output).
"""

import argparse

from keras_elmo.models import LMSubstitutes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="elmo_small_en")
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument(
        "--sentence",
        action="append",
        help="A whitespace-tokenized sentence (repeatable).",
    )
    args = parser.parse_args(argv)
    sentences = [
        s.split()
        for s in args.sentence
        or ["I went to the bank to deposit money .", "The river bank ."]
    ]
    lm = LMSubstitutes.from_preset(args.model)
    results = lm.substitutes(sentences, top_k=args.top_k)
    for sentence in results:
        print(" ".join(token["word"] for token in sentence))
        for token in sentence:
            row = []
            for direction in ("forward", "backward"):
                guesses = token[direction]
                row.append(
                    " ".join(
                        f"{w}({p:.1f})"
                        for w, p in zip(
                            guesses["candidate_words"], guesses["logp"]
                        )
                    )
                )
            print(f"  {token['word']:>10}  ->{row[0]:<40} <-{row[1]}")
    return results


if __name__ == "__main__":
    main()
