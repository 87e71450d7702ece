"""Convert AllenNLP / bilm-tf ELMo weights to a `.keras` file and back.

    python examples/convert_allennlp_weights.py --options o.json \
        --weights w.hdf5 --out-dir converted/
"""

import argparse
import os

import keras
import numpy as np

import keras_elmo


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--options", required=True)
    parser.add_argument("--weights", required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
    keras_path = os.path.join(args.out_dir, "bilm.keras")
    bilm.save(keras_path)
    reloaded = keras.saving.load_model(keras_path, safe_mode=True)
    back_options = os.path.join(args.out_dir, "options.json")
    back_weights = os.path.join(args.out_dir, "weights.hdf5")
    reloaded.save_allennlp(back_options, back_weights)
    ids = keras_elmo.batch_to_ids([["Round", "trip", "."]])
    diff = np.abs(
        np.asarray(bilm(ids)["lstm_outputs2"])
        - np.asarray(reloaded(ids)["lstm_outputs2"])
    ).max()
    print(f"wrote {keras_path}, {back_options}, {back_weights}")
    print(f"max |difference| after the round trip: {diff}")
    return diff


if __name__ == "__main__":
    main()
