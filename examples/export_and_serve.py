"""Export a biLM as a TF-Hub-style SavedModel, reload it without keras_elmo.

Exports `--model` (the shipped `elmo_small_en` by default; an
architecture preset such as `tiny` gets random weights) with
`keras_elmo.export_saved_model`, loads it back with plain
`tf.saved_model.load` (as TF Serving or `hub.load` would, no keras_elmo
code involved), calls both signatures, `default` (sentences) and
`tokens` (padded tokens + lengths), prints every output's shape and
checks the layers equal the Keras model's own outputs.

python examples/export_and_serve.py
python examples/export_and_serve.py --model tiny --out /tmp/elmo/1
"""

import argparse
import tempfile

import numpy as np
import tensorflow as tf
from bilm_cache import load_bilm

import keras_elmo

SENTENCES = [
    "The bank was closed on Sunday .",
    "We sat on the bank of the river and watched the boats .",
    "Play it again .",
]


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--model", default="elmo_small_en")
    parser.add_argument(
        "--out", default=None, help="SavedModel directory (default: temp)."
    )
    parser.add_argument("--sentence", action="append")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=1e-4,
        help="Largest allowed |SavedModel - Keras| difference.",
    )
    args = parser.parse_args(argv)
    sentences = args.sentence or SENTENCES
    bilm = load_bilm(args.model)
    out = args.out or tempfile.mkdtemp(prefix="elmo_savedmodel_")
    keras_elmo.export_saved_model(bilm, out)
    print(f"exported {args.model} to {out}")

    loaded = tf.saved_model.load(out)
    print(f"signatures: {sorted(loaded.signatures)}")
    by_text = loaded.signatures["default"](text=tf.constant(sentences))
    token_lists = [s.split() for s in sentences]
    steps = max(len(t) for t in token_lists)
    padded = [t + [""] * (steps - len(t)) for t in token_lists]
    by_tokens = loaded.signatures["tokens"](
        tokens=tf.constant(padded),
        sequence_len=tf.constant([len(t) for t in token_lists], tf.int32),
    )

    expected = dict(bilm(keras_elmo.batch_to_ids(token_lists), training=False))
    layers = ["word_emb"] + [
        f"lstm_outputs{k}" for k in range(1, bilm.num_output_layers)
    ]
    # A bare biLM exports the plain average of its layers as `elmo`
    # (s = 0, gamma = 1): ([x; x] + h_1 + ... + h_L) / (L + 1).
    word_emb = np.asarray(expected["word_emb"])
    expected["elmo"] = (
        np.concatenate([word_emb, word_emb], axis=-1)
        + sum(np.asarray(expected[key]) for key in layers[1:])
    ) / bilm.num_output_layers
    layers.append("elmo")
    differences = {}
    for name, outputs in (("default", by_text), ("tokens", by_tokens)):
        print(f"signature {name!r}:")
        for key in sorted(outputs):
            print(f"  {key:<14} {tuple(outputs[key].shape)}")
        worst = 0.0
        for key in layers:
            mask = np.asarray(expected["mask"])[..., None]
            diff = np.abs(
                np.asarray(outputs[key]) - np.asarray(expected[key]) * mask
            )
            worst = max(worst, float(diff.max()))
        differences[name] = worst
        print(f"  max |SavedModel - Keras| over {layers}: {worst:.2e}")
    if max(differences.values()) > args.tolerance:
        raise AssertionError(
            f"SavedModel outputs differ from the Keras model's by "
            f"{differences}, more than --tolerance {args.tolerance}."
        )
    print("SavedModel outputs equal the Keras model's.")
    return {
        "path": out,
        "default": {k: np.asarray(v) for k, v in by_text.items()},
        "tokens": {k: np.asarray(v) for k, v in by_tokens.items()},
        "max_abs_difference": differences,
    }


if __name__ == "__main__":
    main()
