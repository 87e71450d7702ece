"""Exports a biLM as a SavedModel with TF Hub `google/elmo/3` signatures.

    keras-elmo export --model runs/small --out savedmodel/elmo --version 1
    keras-elmo export --options o.json --weights w.hdf5 --out elmo_sm

`--model` is a `keras-elmo train` output directory (options.json +
weights.hdf5) or a `.keras` file holding a BiLM or an ElmoLayer's model;
`--options/--weights` name the AllenNLP files directly. With neither,
`--preset` chooses: a shipped pretrained preset (the default,
elmo_small_en, when installed), or an architecture preset such as `tiny`
with random weights, which comes with a loud warning (for trying the
serving plumbing only).

With `--version N` the SavedModel goes to OUT/N, the layout TF Serving
polls (`--model_base_path=OUT`). The export is written beside its
destination and renamed into place; an existing model is only replaced
with `--force`. Signatures, limits and serving: savedmodel/README.md.
"""

import os
import sys

from keras_elmo.cli.model_args import add_model_arguments
from keras_elmo.cli.model_args import load_bilm

HELP = "Export a SavedModel (TF Hub elmo/3 signatures) for TF Serving."

SAVED_MODEL_FILE = "saved_model.pb"


def add_arguments(parser):
    parser.add_argument(
        "--model",
        help="A `keras-elmo train` output directory (options.json + "
        "weights.hdf5) or a .keras file; or use --options/--weights.",
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--out", required=True, help="SavedModel directory (or base dir)."
    )
    parser.add_argument(
        "--version",
        type=int,
        help="Write to OUT/VERSION (TF Serving layout); a positive integer.",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="Tokens kept per sentence (default: 512); longer input is "
        "truncated.",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="Replace an existing SavedModel at the destination.",
    )
    parser.add_argument(
        "--vocab",
        default=None,
        help="Vocabulary file (bilm-tf format): the SavedModel keeps these "
        "tokens' char-CNN embeddings and runs the char-CNN only for other "
        "tokens (same outputs, lower latency, larger model).",
    )


def is_saved_model(path):
    return os.path.isfile(os.path.join(path, SAVED_MODEL_FILE))


def latest_version(base_dir):
    """The highest numeric `base_dir/N` that holds a SavedModel, or None."""
    versions = [
        int(name)
        for name in os.listdir(base_dir)
        if name.isdigit() and is_saved_model(os.path.join(base_dir, name))
    ]
    return os.path.join(base_dir, str(max(versions))) if versions else None


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
    if not getattr(args, "model", None):
        bilm, description = load_bilm(args)
        if "RANDOMLY INITIALISED" in description:
            warn_random(description)
        return bilm, description
    if args.options or args.weights:
        raise ValueError(
            "Give the model once: `--model` or `--options/--weights`, "
            "received both."
        )
    path = args.model
    if os.path.isdir(path):
        return _load_model_dir(path), f"model {path}"
    if path.endswith(".keras") and os.path.isfile(path):
        return _load_keras_file(path), f"model {path}"
    if not os.path.exists(path):
        raise FileNotFoundError(f"`--model` {path!r} does not exist.")
    raise ValueError(
        f"`--model` {path!r} is neither a directory nor a .keras file."
    )


def _load_model_dir(path):
    import keras_elmo
    from keras_elmo.weights.model_files import model_paths

    paths = model_paths(path)
    if os.path.exists(paths["options"]) and os.path.exists(paths["weights"]):
        return keras_elmo.BiLM.from_allennlp(paths["options"], paths["weights"])
    if is_saved_model(path) or latest_version(path):
        raise ValueError(
            f"`--model` {path!r} is a SavedModel; export needs the trained "
            "model (options.json + weights.hdf5)."
        )
    raise ValueError(
        f"`--model` {path!r} is not a trained model directory: expected "
        f"{os.path.basename(paths['options'])} and "
        f"{os.path.basename(paths['weights'])} in it."
    )


def _load_keras_file(path):
    import keras

    import keras_elmo

    model = keras.saving.load_model(path, safe_mode=True)
    if isinstance(model, keras_elmo.BiLM):
        return model
    layers = [
        layer
        for layer in getattr(model, "layers", [])
        if isinstance(layer, keras_elmo.layers.ElmoLayer)
    ]
    if len(layers) == 1:
        return layers[0]
    raise ValueError(
        f"`--model` {path!r} holds a {type(model).__name__} with "
        f"{len(layers)} ElmoLayers; expected a BiLM or exactly one "
        "ElmoLayer."
    )


def destination(out, version):
    if version is None:
        return out
    if version < 1:
        raise ValueError(
            f"`--version` must be a positive integer, received {version}."
        )
    return os.path.join(out, str(version))


def run(args):
    from keras_elmo.export import signatures
    from keras_elmo.export.saved_model import export_saved_model
    from keras_elmo.utils.validation import check_positive_int

    max_tokens = args.max_tokens
    if max_tokens is None:
        max_tokens = signatures.MAX_TOKENS
    check_positive_int("--max-tokens", max_tokens)
    path = destination(args.out, args.version)
    if os.path.exists(path) and not args.force:
        if not (os.path.isdir(path) and not os.listdir(path)):
            raise FileExistsError(
                f"Output {path!r} exists; pass --force to overwrite it."
            )
    model, description = load_bilm_source(args)
    vocab = getattr(args, "vocab", None)
    export_saved_model(
        model, path, max_tokens=max_tokens, overwrite=True, vocabulary=vocab
    )
    sys.stdout.write(
        f"Exported {description}\n  to {path}\n"
        "signatures: default (= serving_default): text [B]; "
        "tokens: tokens [B,T], sequence_len [B]\n"
        f"max tokens per sentence: {max_tokens}\n"
        + (f"token cache: {vocab}\n" if vocab else "")
    )
    return 0
