"""Which biLM layer knows POS? A linear probe per layer (paper Tables 5/6).

For each layer `j` of the frozen biLM (`0` = the context-free token layer
`[x; x]`, `1..L` the biLSTM layers) a linear softmax classifier
`p(tag_k) = softmax(W h_{k,j} + b)` is trained on the UD English-EWT
training tokens alone (no context beyond what `h_{k,j}` holds), with
early stopping on dev accuracy, and scored on test. Peters et al. (2018)
found the first biLSTM layer best for POS (syntax), the top one best
for word senses.

python examples/layer_probe.py --out-json examples/results/layer_probe.json
python examples/layer_probe.py                    # elmo_small_en, no file
python examples/layer_probe.py --model tiny --max-sentences 50 --epochs 1
"""

import argparse
import time

import bilm_cache
import keras
import numpy as np
import pos_data
from pos_tagging import DEFAULT_DATA
from pos_tagging import FILES
from pos_tagging import load_split

from keras_elmo.utils.provenance import provenance
from keras_elmo.utils.provenance import write_json


def token_arrays(split, bilm, args):
    """`([N, L + 1, 2P] float16 activations, [N] tag ids)` of a split."""
    sentences, layers = load_split(args, split, bilm)
    tags = pos_data.Vocabulary(dict.fromkeys(pos_data.UPOS_TAGS, 1), unk=False)
    tag_ids = np.array(
        [tags.id(t) for _, upos in sentences for t in upos], np.int32
    )
    return np.concatenate(layers, axis=0), tag_ids, len(tags)


def probe_layer(train, dev, test, layer, num_tags, args):
    """Trains the linear probe on layer `layer`; its dev and test accuracy."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(args.seed)
    model = keras.Sequential(
        [
            keras.Input((train[0].shape[-1],)),
            keras.layers.Dense(num_tags, activation="softmax"),
        ]
    )
    model.compile(
        keras.optimizers.Adam(args.learning_rate),
        "sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )

    def features(split):
        return split[0][:, layer].astype(np.float32)

    model.fit(
        features(train),
        train[1],
        batch_size=args.batch_size,
        epochs=args.epochs,
        validation_data=(features(dev), dev[1]),
        callbacks=[
            keras.callbacks.EarlyStopping(
                "val_accuracy", patience=2, restore_best_weights=True
            )
        ],
        verbose=0,
    )
    _, dev_accuracy = model.evaluate(features(dev), dev[1], verbose=0)
    _, test_accuracy = model.evaluate(features(test), test[1], verbose=0)
    return float(dev_accuracy), float(test_accuracy)


def add_probe_arguments(parser):
    """The data and training flags of a linear probe (also
    cove_layer_probe.py's): UD-EWT directory, epochs, batch size, Adam
    learning rate, seed, a cap on sentences per split, the cache."""
    parser.add_argument("--data-dir", default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-sentences", type=int, default=None)
    parser.add_argument("--cache-dir", default=None)


def main(argv=None):
    start = time.time()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--model", default="elmo_small_en")
    add_probe_arguments(parser)
    parser.add_argument(
        "--out-json",
        default=None,
        help="Write the accuracies, with provenance, to this JSON file.",
    )
    args = parser.parse_args(argv)

    bilm = bilm_cache.load_bilm(args.model)
    splits = {split: token_arrays(split, bilm, args) for split in FILES}
    num_tags = splits["train"][2]
    train, dev, test = (splits[s][:2] for s in ("train", "dev", "test"))
    names = ["token layer [x; x]"] + [
        f"biLSTM layer {j}" for j in range(1, train[0].shape[1])
    ]
    results = {}
    print(
        f"Linear UPOS probe per biLM layer, model {args.model} "
        f"(weights digest {bilm_cache.weights_digest(bilm)})"
    )
    print(f"{'layer':<22} dev      test")
    for layer, name in enumerate(names):
        dev_accuracy, test_accuracy = probe_layer(
            train, dev, test, layer, num_tags, args
        )
        results[str(layer)] = {
            "name": name,
            "dev": dev_accuracy,
            "test": test_accuracy,
        }
        print(f"{layer} {name:<20} {dev_accuracy:.4f}   {test_accuracy:.4f}")
    # The layer is chosen on dev; test only reports it.
    best = max(range(len(names)), key=lambda j: results[str(j)]["dev"])
    print(f"best layer on dev: {best} ({names[best]})")
    summary = {
        "model": args.model,
        "weights_digest": bilm_cache.weights_digest(bilm),
        "tokens": {s: int(splits[s][1].shape[0]) for s in FILES},
        "settings": {
            "epochs": args.epochs,
            "batch_size": args.batch_size,
            "learning_rate": args.learning_rate,
            "seed": args.seed,
            "max_sentences": args.max_sentences,
        },
        "layers": results,
        "best_layer_on_dev": best,
    }
    summary["seconds"] = round(time.time() - start, 1)
    if args.out_json:
        summary["provenance"] = provenance()
        write_json(args.out_json, summary)
    return summary


if __name__ == "__main__":
    main()
