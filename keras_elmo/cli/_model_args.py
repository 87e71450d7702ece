"""Which model a command uses: its flags, mapped onto the library's spec.

Every command that loads a biLM takes the same flags and hands them to
`keras_elmo.embedding.model_spec` (the library's one description of a
model by plain values, resolved by `keras_elmo.presets.sources
.resolve_model`); this module only adds the flags, names them in errors
and prints the warning for random weights.
"""

import os
import sys

from keras_elmo.cli._library_values import ARCHITECTURE_NAMES
from keras_elmo.cli.main import flag_name
from keras_elmo.cli.main import flag_words

# The spec keys (`keras_elmo.embedding.model_spec.MODEL_ARGUMENTS`) the
# model flags set; each key's flag is `main.flag_name(key)` (`--model`).
KEYS = (
    "model",
    "options",
    "weights",
    "preset",
    "random_weights",
    "seed",
    "vocab",
    "trust_saved_model",
)
FLAGS = {flag_name(key) for key in KEYS}


def add_model_arguments(parser, model_help=None, vocab_help=None):
    group = parser.add_argument_group("model (give one; default elmo_small_en)")
    group.add_argument(
        "--model",
        help=model_help
        or "A model folder (options.json + weights.hdf5, a keras-elmo train "
        "output, an NLPL folder with model.hdf5, an ELMoForManyLangs "
        "folder), a .zip of one, a SavedModel or TF Serving folder, or a "
        ".keras file.",
    )
    group.add_argument(
        "--options", help="bilm-tf / AllenNLP options.json of the model."
    )
    group.add_argument(
        "--weights", help="bilm-tf / AllenNLP weights.hdf5 of the model."
    )
    group.add_argument(
        "--preset",
        default=None,
        help="A model by name (shipped: elmo_small_en, the default; "
        "published: `keras-elmo presets`, downloaded once), or any source "
        "--model takes, an http(s):// or file:// URL, or hf://owner/repo.",
    )
    group.add_argument(
        "--random-weights",
        metavar="ARCH",
        choices=list(ARCHITECTURE_NAMES),
        default=None,
        help="An architecture with random weights "
        f"({', '.join(ARCHITECTURE_NAMES)}): shapes and plumbing only.",
    )
    group.add_argument(
        "--seed", type=int, default=0, help="Seed for --random-weights."
    )
    group.add_argument(
        "--trust-saved-model",
        action="store_true",
        help="Load a SavedModel that keras-elmo export did not write (ops "
        "outside its exports' allow-list: it could read or write files "
        "when run). Only for SavedModels you trust.",
    )
    if vocab_help:
        parser.add_argument("--vocab", default=None, help=vocab_help)


def model_spec(args):
    """The library's model spec of the command's flags; local paths made
    absolute (workers may run elsewhere)."""
    spec = {key: getattr(args, key, None) for key in KEYS}
    for key in ("model", "options", "weights", "vocab", "preset"):
        value = spec[key]
        if value and "://" not in value and os.path.exists(value):
            spec[key] = os.path.abspath(value)
    return spec


def flag_error(error):
    """`error` with the spec's key names (`` `model` ``, `options=`)
    replaced by the flags (`main.flag_words`)."""
    return type(error)(flag_words(str(error), FLAGS, bare=True))


def check_model_flags(args):
    """Refuses conflicting model flags before any work, under flag names."""
    from keras_elmo.embedding.model_spec import check_spec

    try:
        check_spec(model_spec(args))
    except ValueError as e:
        raise flag_error(e) from None
    name = getattr(args, "preset", None)
    if name in ARCHITECTURE_NAMES:
        from keras_elmo.presets.published import ARCHITECTURE_TWINS

        twin = ARCHITECTURE_TWINS.get(name)
        hint = (
            f"; AllenNLP's trained {name!r} is --preset {twin}" if twin else ""
        )
        raise ValueError(
            f"`--preset` {name!r} is an architecture, not a trained model: "
            f"`--random-weights {name}` builds it with random weights{hint}; "
            "trained models by name: `keras-elmo presets`."
        )


def load_runner(args):
    """`(runner, description)` for `embed`: what the flags name."""
    from keras_elmo.embedding.model_spec import load_spec

    check_model_flags(args)
    spec = model_spec(args)
    try:
        runner, description = load_spec(spec)
    except (ValueError, FileNotFoundError) as e:
        raise _named(e, spec) from None
    if spec.get("random_weights"):
        warn_random(description)
    return runner, description


def load_bilm_from_flags(args):
    """`(BiLM or ElmoLayer, description)` for `export` / `demo`."""
    from keras_elmo.embedding.model_spec import load_spec
    from keras_elmo.embedding.model_spec import source_of
    from keras_elmo.models.bilm import load_bilm_or_elmo_layer

    check_model_flags(args)
    spec = model_spec(args)
    if spec.get("random_weights"):
        runner, description = load_spec(spec)
        warn_random(description)
        return runner.bilm, description
    try:
        return load_bilm_or_elmo_layer(source_of(spec))
    except (ValueError, FileNotFoundError) as e:
        raise _named(e, spec) from None


def model_vocabulary(args):
    """The vocabulary file (`vocab.txt`) beside the model the flags name,
    or None (none there, or random weights)."""
    from keras_elmo.embedding.model_spec import source_of
    from keras_elmo.presets.sources import resolve_model

    spec = model_spec(args)
    if spec.get("random_weights"):
        return None
    try:
        return resolve_model(source_of(spec)).vocabulary
    except (ValueError, FileNotFoundError) as e:
        raise _named(e, spec) from None


def _named(error, spec):
    """A resolver error prefixed with the flag that named the model."""
    error = flag_error(error)
    for key in ("model", "options", "preset"):
        if spec.get(key):
            flag = flag_name(key)
            hint = ""
            message = str(error)
            if (
                key == "preset"
                and "no such preset" in message
                and "Did you mean" not in message
            ):
                # Nothing trained is near the name: random weights may be
                # what was meant (`demo --preset tiny`). When a trained
                # model is suggested, it is the answer, alone.
                hint = (
                    "; or an architecture with random weights: "
                    f"`--random-weights` {list(ARCHITECTURE_NAMES)}"
                )
            return type(error)(f"`{flag}`: {error}{hint}")
    return error


def warn_random(description, stream=None):
    """The loud warning for a randomly initialised model."""
    stream = stream or sys.stderr
    bar = "!" * 72
    stream.write(
        f"{bar}\nWARNING: no trained model given; using a {description}.\n"
        "Pass --model DIR or --preset NAME for real vectors.\n"
        f"{bar}\n"
    )
