"""Embeds a text file, one sentence per line, into an HDF5 file.

    keras-elmo embed sentences.txt vectors.hdf5 --top --model runs/small
    keras-elmo embed sentences.txt vectors.hdf5 --model savedmodel/elmo/1

Writes the layout of AllenNLP's `allennlp elmo` command: for input line
`i` (0-based), a float32 dataset `"i"` of shape `(L + 1, n_tokens, 2P)`
with `--all` (the default; layer 0 is the token embedding twice,
`[x; x]`), or `(n_tokens, 2P)` with `--top` (the last biLSTM layer) or
`--average` (the mean of the `L + 1` layers); plus `sentence_to_index`,
a 1-element string dataset holding the JSON `{sentence: "i"}` (a repeated
sentence maps to its last line), and the root attribute `keras_elmo_run`,
what produced the file (the model's digest, the input's size, mtime and
sha256, the settings, the version; docs/CRASH_SAFETY.md). Lines are
stripped and split on whitespace (`line.split()`), after dropping a
UTF-8 byte-order mark at the start of a line (a Windows `\\r\\n` line
end is whitespace). A blank line gives an empty dataset of shape
`(L + 1, 0, 2P)` or `(0, 2P)` (AllenNLP refuses such files). The input
is checked first as `keras_elmo.data.corpus_health` describes (not
UTF-16, not binary).

The input is read in chunks of `16 * --batch-size` lines, each sorted by
length into batches (less padding) and written back in line order, so
memory does not grow with the file. Each finished chunk is committed
(fsynced, renamed) to the folder `OUTPUT.partial/`, assembled into
OUTPUT at the end; after an interruption (even a kill -9), `--resume`
keeps the committed chunks and computes the rest, once it has checked
that the model, the input's content and the options are those of the
interrupted run (docs/CRASH_SAFETY.md). OUTPUT is
never overwritten without `--force`, and an OUTPUT that is a directory
is refused before any work. A full disk (or a file size limit, or an
unwritable directory) stops the run with an error naming OUTPUT.partial;
OUTPUT is unchanged and a rerun with `--resume` continues.

The model: `--model` or `--preset` (any source: a SavedModel from
`keras-elmo export`, whose `tokens` signature truncates sentences at its
max tokens, 512 by default; a TF Serving base directory, the highest
version; a `keras-elmo train` output; a `.keras` file; a .zip archive; a
name, URL or hf://owner/repo), `--options/--weights`, or
`--random-weights ARCH` (warns loudly). Default: the shipped
elmo_small_en. The engine is `keras_elmo.embedding.hdf5_output`.
"""

import sys

from keras_elmo.cli._corpus_args import add_corpus_check_arguments
from keras_elmo.cli._corpus_args import check_corpus_from_args
from keras_elmo.cli._embed_beam import add_beam_arguments
from keras_elmo.cli._embed_beam import refuse_beam_only_flags
from keras_elmo.cli._embed_spark import add_spark_arguments
from keras_elmo.cli._model_args import add_model_arguments
from keras_elmo.cli._model_args import check_model_flags
from keras_elmo.cli._model_args import load_runner

HELP = "Embed a file of sentences into HDF5 (the allennlp elmo layout)."

# Flags people try (the library's `layers=` setting) -> what to use.
FLAG_HINTS = {
    "--layers": "choose the layers with --all (the default), --top or "
    "--average",
}


def add_arguments(parser):
    parser.add_argument("input", help="Text file, one sentence per line.")
    parser.add_argument("output", help="Output HDF5 file.")
    layers = parser.add_mutually_exclusive_group()
    for name, text in (
        ("all", "All layers, (L+1, n_tokens, 2P) per line (default)."),
        ("top", "The top biLSTM layer, (n_tokens, 2P) per line."),
        ("average", "The mean of all layers, (n_tokens, 2P) per line."),
    ):
        layers.add_argument(
            f"--{name}",
            dest="layers",
            action="store_const",
            const=name,
            help=text,
        )
    parser.set_defaults(layers="all")
    add_model_arguments(
        parser,
        vocab_help="Vocabulary file (bilm-tf format, one token per line): "
        "its tokens' char-CNN embeddings are computed once and looked up; "
        "other tokens run the char-CNN. Same vectors, faster. Not with a "
        "SavedModel.",
    )
    parser.add_argument(
        "--batch-size", type=int, default=64, help="Sentences per batch."
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="Continue an interrupted (even killed) run from "
        "OUTPUT.partial; refused if the model, the input's content or the "
        "options changed.",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="Overwrite OUTPUT (and discard an old OUTPUT.partial).",
    )
    add_corpus_check_arguments(parser, oov=False)
    add_beam_arguments(parser)
    add_spark_arguments(parser)
    parser.set_defaults(accepts_pipeline_options=True, pipeline_options=None)


def run(args):
    from keras_elmo.embedding import hdf5_output as hdf5_embedding
    from keras_elmo.utils import check_positive_int

    check_model_flags(args)
    if not args.runner:
        refuse_beam_only_flags(args)
    if args.spark_master:
        from keras_elmo.cli._embed_spark import run_spark

        return run_spark(args)
    if args.runner:
        from keras_elmo.cli._embed_beam import run_beam

        return run_beam(args)
    if getattr(args, "pipeline_options", None):
        raise ValueError(
            f"Unrecognized arguments {args.pipeline_options}: Beam pipeline "
            "options need --runner."
        )
    check_positive_int("--batch-size", args.batch_size)
    runner, description = _checked_paths_and_runner(args)
    check_corpus_from_args(args, "input", args.input, require_sentences=False)
    sys.stderr.write(f"Embedding {args.input} with {description}\n")
    total = hdf5_embedding.embed_file(
        runner,
        args.input,
        args.output,
        layers=args.layers,
        batch_size=args.batch_size,
        resume=args.resume,
        force=args.force,
        progress=True,
    )
    sys.stderr.write(f"Wrote {total} sentences to {args.output}\n")
    return 0


def _checked_paths_and_runner(args):
    """Checks the paths before the model loads (a bad path fails fast),
    then loads it (a bad name fails here). An existing OUTPUT that
    records its run is refused only once the model is loaded, so that the
    refusal can say whether it is this very run or what changed."""
    from keras_elmo.embedding import hdf5_output as hdf5_embedding

    paths = (args.input, args.output, args.force, args.resume)
    try:
        hdf5_embedding.check_paths(*paths)
    except FileExistsError:
        if not hdf5_embedding.records_run(args.output):
            raise
        runner, _ = load_runner(args)
        hdf5_embedding.check_paths(
            *paths,
            current_run=lambda: hdf5_embedding.run_record(
                runner, args.input, args.layers
            ),
        )
        raise
    return load_runner(args)
