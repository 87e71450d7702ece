"""Writes a shipped preset from a training run's latest checkpoint.

    python tools/snapshot_preset.py --train-command-config CONFIG.json \
        --name elmo_small_en

CONFIG.json holds the `TrainingConfig` fields of the run (the same values
as its `keras-elmo train` flags). The latest checkpoint in its out_dir is
restored (the run may still be going) and written, float16, to
`keras_elmo/presets/NAME/`: options.json, weights.hdf5, softmax.hdf5,
vocab.txt. Also prints the held-out perplexity of the snapshot when the
config names `valid` data. The model card is written by hand.
"""

import argparse
import json
import os

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PRESETS = os.path.join(HERE, "..", "keras_elmo", "presets")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train-command-config", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--evaluate", help="Files to report perplexity on.")
    args = parser.parse_args(argv)

    from keras_elmo.training.evaluate import evaluate_model
    from keras_elmo.training.trainer import Trainer
    from keras_elmo.training.training_config import TrainingConfig
    from keras_elmo.utils.atomic import atomic_path
    from keras_elmo.weights.hdf5 import save_bilm_hdf5
    from keras_elmo.weights.hdf5 import save_softmax_hdf5

    with open(args.train_command_config) as f:
        config = TrainingConfig(**json.load(f))
    config.strategy = "one_device"
    trainer = Trainer(config)
    if not trainer.resumed_from:
        raise SystemExit(f"No checkpoint in {config.out_dir}/checkpoints.")
    out = os.path.join(PRESETS, args.name)
    os.makedirs(out, exist_ok=True)
    backbone = trainer.model.backbone
    save_bilm_hdf5(backbone, os.path.join(out, "weights.hdf5"), "float16")
    backbone.config.to_options_json(os.path.join(out, "options.json"))
    softmax_path = os.path.join(out, "softmax.hdf5")
    save_softmax_hdf5(trainer.model.softmax, softmax_path)
    with h5py.File(softmax_path, "r") as f:
        weights = {k: np.asarray(f[f"softmax/{k}"]) for k in ("W", "b")}
    with atomic_path(softmax_path) as tmp:
        with h5py.File(tmp, "w") as f:
            for key, value in weights.items():
                f.create_dataset(f"softmax/{key}", data=value.astype("float16"))
    trainer.vocabulary.save(os.path.join(out, "vocab.txt"))
    state = trainer.state
    summary = {
        "checkpoint": trainer.resumed_from,
        "step": int(state.step.numpy()),
        "epoch": int(state.epoch.numpy()),
        "batch_in_epoch": int(state.batch_in_epoch.numpy()),
    }
    if args.evaluate:
        # Score the float16-rounded weights that actually ship.
        from keras_elmo.models.language_model import load_language_model

        model, vocabulary = load_language_model(out)
        summary.update(evaluate_model(model, vocabulary, args.evaluate))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
