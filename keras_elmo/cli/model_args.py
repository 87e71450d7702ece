"""Shared `--options/--weights/--preset` arguments: which biLM to load."""

import logging
import os
import sys

logger = logging.getLogger(__name__)

DEFAULT_PRESET = "elmo_small_en"


def add_model_arguments(parser):
    group = parser.add_argument_group("model")
    group.add_argument(
        "--options", help="bilm-tf / AllenNLP options.json of the model."
    )
    group.add_argument(
        "--weights", help="bilm-tf / AllenNLP weights.hdf5 of the model."
    )
    group.add_argument(
        "--preset",
        default=None,
        help="A shipped pretrained preset (default: elmo_small_en when "
        "installed), or an architecture preset (tiny, small, ...) to use "
        "with random weights.",
    )
    group.add_argument(
        "--seed", type=int, default=0, help="Seed for random initialisation."
    )


def load_bilm(args):
    """Returns `(bilm, description)` for the model the arguments name."""
    import keras

    import keras_elmo

    if bool(args.options) != bool(args.weights):
        raise ValueError(
            "`--options` and `--weights` go together, received "
            f"--options={args.options!r} --weights={args.weights!r}."
        )
    if args.options:
        bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
        return bilm, f"weights {args.weights}"
    from keras_elmo.presets import available_presets

    shipped = available_presets()
    name = args.preset or (
        DEFAULT_PRESET if DEFAULT_PRESET in shipped else "tiny"
    )
    if name in shipped:
        return keras_elmo.BiLM.from_preset(name), f"shipped preset {name}"
    from keras_elmo.config import PRESETS

    if name not in PRESETS:
        raise ValueError(
            "Received an invalid value for `--preset`, expected a shipped "
            f"preset {sorted(shipped)} or an architecture preset "
            f"{sorted(PRESETS)}, got {name!r}."
        )
    keras.utils.set_random_seed(args.seed)
    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_preset(name))
    return bilm, (
        f"RANDOMLY INITIALISED '{name}' preset (seed {args.seed}): "
        "shapes and plumbing only, the vectors carry no meaning"
    )


def warn_random(description, stream=None):
    """The loud warning for a randomly initialised model."""
    stream = stream or sys.stderr
    bar = "!" * 72
    stream.write(
        f"{bar}\nWARNING: no trained model given; using a {description}.\n"
        "Pass --model DIR or --options O --weights W for real vectors.\n"
        f"{bar}\n"
    )


def load_bilm_source(args):
    """`(BiLM or ElmoLayer, description)` from --model / --options / preset.

    A `--model` directory must hold options.json + weights.hdf5 (a
    `keras-elmo train` output); a `--model` file must be a `.keras` file.
    """
    from keras_elmo.export.serving_layout import is_saved_model
    from keras_elmo.export.serving_layout import latest_version
    from keras_elmo.models.loading import load_bilm_or_elmo_layer

    path = getattr(args, "model", None)
    if not path:
        bilm, description = load_bilm(args)
        if "RANDOMLY INITIALISED" in description:
            warn_random(description)
        return bilm, description
    if args.options or args.weights:
        raise ValueError(
            "Give the model once: `--model` or `--options/--weights`, "
            "received both."
        )
    if os.path.isdir(path) and (is_saved_model(path) or latest_version(path)):
        raise ValueError(
            f"`--model` {path!r} is a SavedModel; export needs the trained "
            "model (options.json + weights.hdf5)."
        )
    return load_bilm_or_elmo_layer(path), f"model {path}"
