"""Embeds a few sentences and shows the shapes and contextual similarities.

With the built-in sentences it also runs the word-sense nearest-neighbour
demo (`keras_elmo.training.word_sense`, paper Table 4). By default it uses the
shipped `elmo_small_en`; a randomly initialised architecture
(`--random-weights tiny`) is labelled as such: its numbers show the
plumbing, not language knowledge.
"""

import sys

from keras_elmo.cli._model_args import add_model_arguments
from keras_elmo.cli._model_args import load_bilm_from_flags

HELP = "Embed example sentences and print shapes and similarities."

SENTENCES = [
    "The children play in the park after school .",
    "We saw a play at the theatre last night .",
    "She sat on the bank of the river .",
    "He deposited the money at the bank .",
]


def add_arguments(parser):
    add_model_arguments(parser)
    parser.add_argument(
        "sentences",
        nargs="*",
        help="Whitespace-tokenized sentences (default: built-in examples).",
    )


def _cosine(a, b):
    import numpy as np

    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def run(args):
    import numpy as np

    import keras_elmo
    from keras_elmo.training.word_sense import write_report

    bilm, description = load_bilm_from_flags(args)
    bilm = getattr(bilm, "bilm", bilm)  # an ElmoLayer's biLM
    out = sys.stdout
    out.write(f"Model: {description}\n")
    sentences = [s.split() for s in (args.sentences or SENTENCES)]
    ids = keras_elmo.batch_to_ids(sentences)
    outputs = bilm(ids)
    out.write(f"char ids: {ids.shape}\n")
    for key, value in outputs.items():
        out.write(f"{key:>14}: {tuple(value.shape)} {value.dtype.name}\n")
    top = np.asarray(outputs[f"lstm_outputs{bilm.config.num_layers}"])
    word = np.asarray(outputs["word_emb"])
    out.write(
        "\nCosine similarity of the same word in different sentences\n"
        "(context-free layer 0 vs. top biLSTM layer):\n"
    )
    seen = {}
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            seen.setdefault(token.lower(), []).append((i, j))
    for token, places in seen.items():
        if len(places) < 2 or not token.isalpha() or token == "the":
            continue
        (i, j), (k, m) = places[0], places[1]
        out.write(
            f"  {token!r:>10} s{i} vs s{k}: layer0 "
            f"{_cosine(word[i, j], word[k, m]):.3f}  top "
            f"{_cosine(top[i, j], top[k, m]):.3f}\n"
        )
    if not args.sentences:
        write_report(bilm, out)
    return 0
