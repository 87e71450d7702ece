"""Shared `--options/--weights/--preset` arguments: which biLM to load."""

import logging

logger = logging.getLogger(__name__)


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
        default="tiny",
        help="Architecture preset used when no weights are given (random "
        "initialisation; default: tiny).",
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
    keras.utils.set_random_seed(args.seed)
    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_preset(args.preset))
    return bilm, (
        f"RANDOMLY INITIALISED '{args.preset}' preset (seed {args.seed}): "
        "shapes and plumbing only, the vectors carry no meaning yet"
    )
