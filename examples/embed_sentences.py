"""Embed tokenized sentences with a biLM and print their ELMo vectors.

python examples/embed_sentences.py --options o.json --weights w.hdf5
python examples/embed_sentences.py            # random tiny biLM
"""

import argparse

import keras
import numpy as np

import keras_elmo


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--options")
    parser.add_argument("--weights")
    parser.add_argument(
        "--sentence",
        action="append",
        help="A whitespace-tokenized sentence (repeatable).",
    )
    args = parser.parse_args(argv)
    if args.options:
        bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
    else:
        keras.utils.set_random_seed(0)
        bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
    sentences = [
        s.split()
        for s in args.sentence
        or ["I went to the bank to deposit money .", "The river bank ."]
    ]
    elmo = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)
    vectors = np.asarray(elmo(keras_elmo.batch_to_ids(sentences)))
    for sentence, rows in zip(sentences, vectors):
        print(" ".join(sentence))
        for token, row in zip(sentence, rows):
            print(f"  {token:>12} {np.array2string(row[:4], precision=3)}...")
    return vectors


if __name__ == "__main__":
    main()
