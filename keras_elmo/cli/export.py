"""Exports a biLM as a SavedModel with TF Hub `google/elmo/3` signatures.

    keras-elmo export --model runs/small --out savedmodel/elmo --version 1
    keras-elmo export --options o.json --weights w.hdf5 --out elmo_sm

`--model` / `--preset` is any model source (a `keras-elmo train` output,
a folder or .zip of AllenNLP / NLPL / ELMoForManyLangs files, a `.keras`
file holding a BiLM or an ElmoLayer's model, a name, a URL);
`--options/--weights` name the AllenNLP files directly. Default: the
shipped elmo_small_en. `--random-weights tiny` builds an architecture
with random weights, with a loud warning (for trying the serving plumbing
only). A SavedModel is refused: export the model it came from.

With `--version N` the SavedModel goes to OUT/N, the layout TF Serving
polls (`--model_base_path=OUT`). The export is written beside its
destination and renamed into place; an existing model is only replaced
with `--force`. Signatures, limits and serving: savedmodel/README.md.

    keras-elmo export --out elmo.onnx --format onnx
    keras-elmo export --out elmo.tflite --format litert
    keras-elmo export --out elmo_int8.tflite --format litert --quantize int8

write one file that runs in ONNX Runtime or LiteRT without TensorFlow
(`keras_elmo.export.portable`): char ids in, the SavedModel's outputs out;
`--quantize int8` stores the weights as int8 (dynamic range).

    keras-elmo export --out vectors.txt --format word2vec [--vocab FILE]

writes layer 0's context-free vectors (char-CNN, highway, projection) of
a vocabulary in word2vec text format, for gensim: the tokens of FILE (one
a line), by default the model's own vocabulary (the `vocab.txt` beside
its weights, or an ELMoForManyLangs model's word lexicon).
"""

import os
import sys

from keras_elmo.cli._model_args import add_model_arguments
from keras_elmo.cli._model_args import check_model_flags
from keras_elmo.cli._model_args import load_bilm_from_flags

HELP = (
    "Export a SavedModel (TF Hub elmo/3 signatures) for TF Serving, or "
    "an ONNX / LiteRT file."
)


def add_arguments(parser):
    add_model_arguments(
        parser,
        vocab_help="Vocabulary file. savedmodel (bilm-tf format): the "
        "SavedModel keeps these tokens' char-CNN embeddings and runs the "
        "char-CNN only for other tokens (same outputs, lower latency, "
        "larger model). word2vec: the tokens whose vectors are written, "
        "one a line (default: the model's vocab.txt, or an "
        "ELMoForManyLangs model's word lexicon).",
    )
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
        "--format",
        choices=("savedmodel", "onnx", "litert", "word2vec"),
        default="savedmodel",
        help="savedmodel (default, a directory); onnx or litert: one "
        "file taking char ids [B,T,50] that runs without TensorFlow "
        "(keras_elmo/export/portable_runtime.py reads it); word2vec: "
        "layer 0's context-free vectors of a vocabulary (--vocab) in "
        "word2vec text format.",
    )
    parser.add_argument(
        "--quantize",
        choices=("int8",),
        default=None,
        help="onnx / litert only: int8 weights (dynamic-range "
        "quantization, about a quarter of the file size; outputs deviate "
        "from float32 by a few percent of the largest activation).",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="Replace an existing SavedModel at the destination.",
    )


def run(args):
    from keras_elmo.export import signatures
    from keras_elmo.export.saved_model import export_saved_model
    from keras_elmo.presets.sources import version_dir
    from keras_elmo.utils import check_positive_int

    check_model_flags(args)
    if getattr(args, "format", "savedmodel") == "word2vec":
        return _run_word2vec(args)
    if getattr(args, "format", "savedmodel") != "savedmodel":
        return _run_portable(args)
    if getattr(args, "quantize", None) is not None:
        raise ValueError(
            "--quantize applies to --format onnx or litert only; received "
            "it with --format savedmodel."
        )
    max_tokens = args.max_tokens
    if max_tokens is None:
        max_tokens = signatures.MAX_TOKENS
    check_positive_int("--max-tokens", max_tokens)
    path = version_dir(args.out, args.version)
    _check_not_an_input(args, path)
    if os.path.exists(path) and not args.force:
        if not (os.path.isdir(path) and not os.listdir(path)):
            raise FileExistsError(
                f"Output {path!r} exists; pass --force to overwrite it."
            )
    model, description = load_bilm_from_flags(args)
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


def _run_portable(args):
    """`--format onnx|litert`: one file at --out."""
    from keras_elmo.export.portable import export_portable

    for flag in ("version", "max_tokens", "vocab"):
        if getattr(args, flag, None) is not None:
            raise ValueError(
                f"--{flag.replace('_', '-')} applies to --format "
                f"savedmodel only; received it with --format {args.format}."
            )
    path = args.out
    _check_not_an_input(args, path, folder=False)
    if os.path.exists(path) and not args.force:
        raise FileExistsError(
            f"Output {path!r} exists; pass --force to overwrite it."
        )
    model, description = load_bilm_from_flags(args)
    quantize = getattr(args, "quantize", None)
    export_portable(
        model, path, format=args.format, overwrite=True, quantize=quantize
    )
    kind = f"{args.format}, {quantize}" if quantize else args.format
    sys.stdout.write(
        f"Exported {description}\n  to {path} ({kind})\n"
        "input: char_ids int32 [B,T,50]; outputs: word_emb, "
        "lstm_outputs1.., elmo, default, sequence_len\n"
    )
    return 0


def _run_word2vec(args):
    """`--format word2vec`: one text file at --out."""
    from keras_elmo.cli._model_args import model_vocabulary
    from keras_elmo.export.portable import export_word2vec

    for flag in ("version", "max_tokens", "quantize"):
        if getattr(args, flag, None) is not None:
            raise ValueError(
                f"--{flag.replace('_', '-')} does not apply to --format "
                "word2vec; received it."
            )
    path = args.out
    _check_not_an_input(args, path, folder=False)
    if os.path.exists(path) and not args.force:
        raise FileExistsError(
            f"Output {path!r} exists; pass --force to overwrite it."
        )
    model, description = load_bilm_from_flags(args)
    vocab = args.vocab or model_vocabulary(args)
    bilm = getattr(model, "bilm", model)
    if vocab is None and not bilm.config.word_lexicon:
        raise ValueError(
            f"{description} has no vocabulary of its own (no vocab.txt "
            "beside its weights, no word lexicon); pass --vocab FILE, one "
            "token a line."
        )
    export_word2vec(model, path, vocabulary=vocab, overwrite=True)
    with open(path, encoding="utf-8") as f:
        count, dim = f.readline().split()
    source = vocab or "the model's word lexicon"
    sys.stdout.write(
        f"Exported {description}\n  to {path} (word2vec text)\n"
        f"{count} tokens of {source}, {dim} values each (layer 0)\n"
    )
    return 0


def _check_not_an_input(args, path, folder=True):
    """Refuses, even with --force, a destination that is (or holds) a
    file or folder the model is read from: it is replaced as a whole."""
    from keras_elmo.utils.atomic import check_not_an_input

    inputs = {
        flag: getattr(args, flag[2:].replace("-", "_"), None)
        for flag in ("--model", "--options", "--weights", "--vocab")
    }
    preset = getattr(args, "preset", None)
    if preset and os.path.exists(preset):
        inputs["--preset"] = preset
    check_not_an_input(path, inputs, argument="--out", folder=folder)
