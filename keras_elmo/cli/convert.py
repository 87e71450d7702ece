"""Converts between the AllenNLP / bilm-tf HDF5 format and `.keras` files.

    keras-elmo convert --options o.json --weights w.hdf5 --to-keras m.keras
    keras-elmo convert --from-keras m.keras --to-options o.json \\
        --to-weights w.hdf5
    keras-elmo convert --from-tfhub elmo_3/ --to-options o.json \\
        --to-weights w.hdf5 --to-mix mix.json
    keras-elmo convert --from-bilm-tf-checkpoint ckpt_dir/ --options \\
        ckpt_dir/options.json --to-options o.json --to-weights w.hdf5 \\
        --to-softmax softmax.hdf5

    keras-elmo convert --from-elmoformanylangs zh.model/ --out zh_elmo/

`--from-elmoformanylangs` reads an ELMoForManyLangs model folder (no
torch needed; docs/ELMOFORMANYLANGS.md) and `--out` writes our model
folder (options.json + weights.hdf5 + lexicons) that `BiLM.from_preset`
and every command take. `--from-tfhub` reads a TF1 Hub module
(google/elmo/3, a folder or its .tar.gz) and `--from-bilm-tf-checkpoint`
a bilm-tf `model.ckpt-*` (a prefix or its folder) with TensorFlow 2;
see keras_elmo.weights.tf_checkpoints for the variables read.
"""

import os

HELP = "Convert AllenNLP HDF5 weights <-> .keras files."
FLAG_ALIASES = {"overwrite": "--force"}


def add_arguments(parser):
    parser.add_argument("--options", help="Input options.json.")
    parser.add_argument("--weights", help="Input weights.hdf5.")
    parser.add_argument(
        "--from-keras",
        help="Input .keras file (a BiLM, or a model with one ElmoLayer).",
    )
    parser.add_argument(
        "--from-tfhub", help="Input TF Hub elmo/3 module folder or .tar.gz."
    )
    parser.add_argument(
        "--from-bilm-tf-checkpoint",
        help="Input bilm-tf checkpoint prefix or folder (with --options).",
    )
    parser.add_argument(
        "--from-elmoformanylangs",
        help="Input ELMoForManyLangs model folder (config.json, char.dic, "
        "word.dic, token_embedder.pkl, encoder.pkl).",
    )
    parser.add_argument(
        "--out",
        help="Output model folder (options.json + weights.hdf5 + lexicons).",
    )
    parser.add_argument("--to-keras", help="Output .keras file.")
    parser.add_argument("--to-options", help="Output options.json.")
    parser.add_argument("--to-weights", help="Output weights.hdf5.")
    parser.add_argument(
        "--to-mix", help="Output JSON of a TF Hub module's learned mix."
    )
    parser.add_argument(
        "--to-softmax", help="Output softmax HDF5 of a bilm-tf checkpoint."
    )
    parser.add_argument(
        "--force", action="store_true", help="Overwrite existing outputs."
    )


def _check_output(path, force):
    if path and os.path.exists(path) and not force:
        raise FileExistsError(
            f"Output {path!r} exists; pass --force to overwrite it."
        )


INPUTS = (
    "options",
    "weights",
    "from_keras",
    "from_tfhub",
    "from_bilm_tf_checkpoint",
    "from_elmoformanylangs",
)
OUTPUTS = ("to_keras", "to_options", "to_weights", "to_mix", "to_softmax")


def _check_outputs_not_inputs(args):
    """Refuses, even with --force, an output that is (or resolves to) an
    input, an `--out` folder holding one, or two outputs naming one file."""
    from keras_elmo.utils.atomic import check_not_an_input
    from keras_elmo.utils.atomic import same_file

    inputs = {_flag(name): getattr(args, name) for name in INPUTS}
    check_not_an_input(args.out, inputs, argument="--out", folder=True)
    outputs = [(_flag(n), getattr(args, n)) for n in OUTPUTS]
    outputs = [(flag, path) for flag, path in outputs if path]
    for index, (flag, path) in enumerate(outputs):
        check_not_an_input(path, inputs, argument=flag)
        for other, other_path in outputs[:index]:
            if same_file(path, other_path):
                raise ValueError(
                    f"Outputs `{other}` and `{flag}` are the same file "
                    f"{path!r}; give each output its own path."
                )


def _flag(name):
    return "--" + name.replace("_", "-")


def _check_keras_file(path):
    import zipfile

    if not os.path.isfile(path):
        raise FileNotFoundError(f"`--from-keras` {path!r} not found.")
    if not path.endswith(".keras") or not zipfile.is_zipfile(path):
        raise ValueError(
            f"`--from-keras` {path!r} is not a .keras file (expected a "
            "`.keras` zip archive written by Keras 3)."
        )


def _bilm_of_keras_file(resolved):
    """The BiLM of a resolved `.keras` source: the file's own, or that of
    its one ElmoLayer (`model_in_keras_file`: archive checked, then
    loaded with `safe_mode=True`)."""
    import keras_elmo
    from keras_elmo.models.bilm_io import model_in_keras_file

    if resolved.format != "keras":
        raise ValueError(
            f"`--from-keras` {resolved.path!r} is a {resolved.format} "
            "model, expected a .keras file."
        )
    found = model_in_keras_file(resolved.path, keras_elmo.BiLM)
    return found if isinstance(found, keras_elmo.BiLM) else found.bilm


def run(args):
    import keras_elmo
    from keras_elmo.cli._convert_tf import load_tf_source
    from keras_elmo.models.bilm_io import write_model_folder
    from keras_elmo.presets import sources
    from keras_elmo.utils.atomic import save_keras_atomically

    _check_outputs_not_inputs(args)
    bilm, extras = load_tf_source(args)
    if bilm is not None:
        pass
    elif args.from_elmoformanylangs:
        bilm = keras_elmo.BiLM.from_elmoformanylangs(args.from_elmoformanylangs)
    elif args.from_keras:
        _check_keras_file(args.from_keras)
        bilm = sources.load(args.from_keras, _bilm_of_keras_file)
    elif args.options and args.weights:
        bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
    else:
        raise ValueError(
            "Give the input as `--options O --weights W`, `--from-keras M` "
            "or `--from-elmoformanylangs DIR`, received none."
        )
    if not (args.to_keras or args.to_options or args.to_weights or args.out):
        raise ValueError(
            "Give an output: `--out FOLDER`, `--to-keras` or `--to-options` "
            "+ `--to-weights`."
        )
    if bool(args.to_options) != bool(args.to_weights):
        raise ValueError("`--to-options` and `--to-weights` go together.")
    outputs = (args.to_keras, args.to_options, args.to_weights)
    for path in outputs + (args.to_mix, args.to_softmax):
        _check_output(path, args.force)
    if args.out:
        write_model_folder(bilm, args.out, overwrite=args.force)
    if args.to_keras:
        save_keras_atomically(bilm, args.to_keras)
    if args.to_options:
        bilm.save_allennlp(args.to_options, args.to_weights)
    extras.write(args)
    _say_what_was_written(args)
    return 0


def _say_what_was_written(args, stream=None):
    """One line per output on stdout: `wrote PATH (what it is)`."""
    import sys

    stream = stream or sys.stdout
    for name, what in (
        ("out", "model folder"),
        ("to_keras", ".keras model"),
        ("to_options", "options.json"),
        ("to_weights", "weights.hdf5"),
        ("to_mix", "the module's learned layer mix"),
        ("to_softmax", "the checkpoint's softmax"),
    ):
        path = getattr(args, name, None)
        if path:
            stream.write(f"wrote {path} ({what})\n")
