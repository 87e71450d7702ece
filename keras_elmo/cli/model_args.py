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
        help="A trained model: a shipped preset (default: elmo_small_en "
        "when installed), a published one (`keras-elmo presets`, downloaded "
        "once), a folder with options.json + weights.hdf5, an http(s):// or "
        "file:// URL of one, or hf://owner/repo; or an architecture preset "
        "(tiny, small, ...) with random weights.",
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
    if args.options:  # local paths, or http(s):// / file:// URLs
        from keras_elmo.presets.sources import resolve_preset

        options, weights, description = resolve_preset(
            (args.options, args.weights)
        )
        return keras_elmo.BiLM.from_allennlp(options, weights), description
    from keras_elmo.config import PRESETS
    from keras_elmo.presets import available_presets
    from keras_elmo.presets.published import ARCHITECTURE_TWINS

    shipped = available_presets()
    name = args.preset or (
        DEFAULT_PRESET if DEFAULT_PRESET in shipped else "tiny"
    )
    if name not in PRESETS:
        from keras_elmo.presets.sources import resolve_preset

        try:
            options, weights, description = resolve_preset(name)
        except ValueError as e:
            if "no such preset or folder" not in str(e):
                raise
            raise ValueError(
                "Received an invalid value for `--preset`, expected a "
                f"trained model (shipped {sorted(shipped)}, published: "
                "`keras-elmo presets`, a folder, a URL or hf://owner/repo) "
                f"or an architecture preset {sorted(PRESETS)}, got {name!r}."
            ) from None
        bilm = keras_elmo.BiLM.from_allennlp(options, weights)
        return bilm, description
    keras.utils.set_random_seed(args.seed)
    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_preset(name))
    twin = ARCHITECTURE_TWINS.get(name)
    hint = f"; AllenNLP's trained '{name}' is --preset {twin}" if twin else ""
    return bilm, (
        f"RANDOMLY INITIALISED '{name}' preset (seed {args.seed}): "
        f"shapes and plumbing only, the vectors carry no meaning{hint}"
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
