"""Embeds a text file, one sentence per line, into an HDF5 file.

    keras-elmo embed sentences.txt vectors.hdf5 --top --model runs/small
    keras-elmo embed sentences.txt vectors.hdf5 --model savedmodel/elmo/1

Writes the layout of AllenNLP's `allennlp elmo` command: for input line
`i` (0-based), a float32 dataset `"i"` of shape `(L + 1, n_tokens, 2P)`
with `--all` (the default; layer 0 is the token embedding twice,
`[x; x]`), or `(n_tokens, 2P)` with `--top` (the last biLSTM layer) or
`--average` (the mean of the `L + 1` layers); plus `sentence_to_index`,
a 1-element string dataset holding the JSON `{sentence: "i"}` (a repeated
sentence maps to its last line). Lines are stripped and split on
whitespace (`line.split()`), after dropping a UTF-8 byte-order mark at
the start of a line (a Windows `\\r\\n` line end is whitespace). A blank
line gives an empty dataset of shape `(L + 1, 0, 2P)` or `(0, 2P)`
(AllenNLP refuses such files). The input is checked first as
`keras_elmo.data.corpus_health` describes (not UTF-16, not binary).

The input is read in chunks of `16 * --batch-size` lines, each sorted by
length into batches (less padding) and written back in line order, so
memory does not grow with the file. Output goes to `OUTPUT.partial`,
renamed to OUTPUT at the end; after an interruption, `--resume` keeps the
datasets already in `OUTPUT.partial` and computes the rest. OUTPUT is
never overwritten without `--force`. A full disk (or a file size limit,
or an unwritable directory) stops the run with an error naming
OUTPUT.partial; OUTPUT is unchanged and a rerun with `--resume` continues.

`--model` is a SavedModel from `keras-elmo export` (its `tokens`
signature is called; it truncates sentences at its max tokens, 512 by
default), a TF Serving base directory (the highest version is used), a
`keras-elmo train` output directory, or a `.keras` file. Without one,
`--preset` chooses (default: the shipped elmo_small_en when installed); a
randomly initialised architecture preset such as `tiny` warns loudly.
"""

import contextlib
import os
import sys

from keras_elmo.cli.corpus_args import add_corpus_check_arguments
from keras_elmo.cli.corpus_args import check_corpus_from_args
from keras_elmo.cli.embed_beam import add_beam_arguments
from keras_elmo.cli.embed_spark import MODEL_ARGUMENTS as SPARK_MODEL_ARGS
from keras_elmo.cli.embed_spark import add_spark_arguments
from keras_elmo.cli.model_args import add_model_arguments
from keras_elmo.cli.model_args import load_bilm_source

HELP = "Embed a file of sentences into HDF5 (the allennlp elmo layout)."

CHUNK_BATCHES = 16  # batches per chunk read, sorted by length together
PARTIAL_SUFFIX = ".partial"
SENTENCE_TO_INDEX = "sentence_to_index"
_RUN_ATTRS = ("keras_elmo_layers", "keras_elmo_num_layers", "keras_elmo_dim")


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
    parser.add_argument(
        "--model",
        help="SavedModel dir, TF Serving base dir, `keras-elmo train` "
        "output dir, or .keras file.",
    )
    add_model_arguments(parser)
    parser.add_argument(
        "--batch-size", type=int, default=64, help="Sentences per batch."
    )
    parser.add_argument(
        "--vocab",
        default=None,
        help="Vocabulary file (bilm-tf format, one token per line): its "
        "tokens' char-CNN embeddings are computed once and looked up; "
        "other tokens run the char-CNN. Same vectors, faster. Not with a "
        "SavedModel --model.",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="Continue an interrupted run from OUTPUT.partial.",
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


def load_embedder(args):
    """`(embedder, description)` for the model the arguments name."""
    from keras_elmo.export.embedder import BiLMEmbedder
    from keras_elmo.export.embedder import SavedModelEmbedder
    from keras_elmo.export.serving_layout import is_saved_model
    from keras_elmo.export.serving_layout import latest_version

    path = getattr(args, "model", None)
    vocab = getattr(args, "vocab", None)
    if path and os.path.isdir(path):
        saved = path if is_saved_model(path) else latest_version(path)
        if saved:
            if vocab:
                raise ValueError(
                    "`--vocab` caches token embeddings of a BiLM; it does "
                    f"not apply to the SavedModel {saved!r}."
                )
            return SavedModelEmbedder(saved), f"SavedModel {saved}"
    bilm, description = load_bilm_source(args)
    if vocab:
        description += f", token cache of {vocab}"
    return BiLMEmbedder(bilm, vocabulary=vocab), description


def load_embedder_for_spec(spec):
    """`load_embedder` for a model spec (a dict of the model arguments), as
    `embed --runner` calls it on each worker; SavedModel URIs (`gs://...`)
    are read through TensorFlow."""
    import types

    from keras_elmo.beam.model_handler import MODEL_ARGUMENTS
    from keras_elmo.beam.model_handler import is_remote
    from keras_elmo.beam.model_handler import load_spec

    if spec.get("model") and is_remote(spec["model"]):
        return load_spec(spec)
    args = types.SimpleNamespace(**{k: spec.get(k) for k in MODEL_ARGUMENTS})
    args.seed = 0 if args.seed is None else args.seed
    return load_embedder(args)


def load_embedder_for_spark(spec):
    """`load_embedder` for a model spec (a dict of the model arguments),
    as `embed --spark-master` calls it in each executor's Python worker
    (the in-process command's own loader, so the same vectors)."""
    import types

    args = types.SimpleNamespace(**{k: spec.get(k) for k in SPARK_MODEL_ARGS})
    args.seed = 0 if args.seed is None else args.seed
    return load_embedder(args)


def _expected_shape(embedder, mode, num_tokens):
    if embedder.max_tokens is not None:
        num_tokens = min(num_tokens, embedder.max_tokens)
    shape = (num_tokens, embedder.output_dim)
    return (embedder.num_layers,) + shape if mode == "all" else shape


def _count_lines(path):
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _chunks(lines, size):
    chunk = []
    for item in lines:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _open_partial(partial, args, embedder):
    import h5py

    from keras_elmo.weights.hdf5_ports import FileKind
    from keras_elmo.weights.hdf5_ports import open_hdf5

    run_attrs = (args.layers, embedder.num_layers, embedder.output_dim)
    if os.path.exists(partial) and args.resume:
        start_over = "; pass --force (without --resume) to start over"
        kind = FileKind(
            name="Partial output", layout=start_over, unreadable=start_over
        )
        out = open_hdf5(partial, kind, mode="a")
        found = tuple(out.attrs.get(name) for name in _RUN_ATTRS)
        if found[0] is not None and found != run_attrs:
            out.close()
            raise ValueError(
                f"{partial!r} was started with (layers, num_layers, dim) = "
                f"{found}, this run has {run_attrs}; use the same options "
                "or pass --force (without --resume) to start over."
            )
    else:
        if os.path.exists(partial) and not args.force:
            raise FileExistsError(
                f"An interrupted run left {partial!r}; pass --resume to "
                "continue it or --force to start over."
            )
        out = h5py.File(partial, "w")
    for name, value in zip(_RUN_ATTRS, run_attrs):
        out.attrs[name] = value
    return out


def embed_file(embedder, args, progress=True):
    """Embeds `args.input` into `args.output`; returns the line count."""
    import h5py
    import keras

    from keras_elmo.export.sentence_index import sentence_to_index_json

    if os.path.exists(args.output) and not args.force:
        raise FileExistsError(
            f"Output {args.output!r} exists; pass --force to overwrite it."
        )
    total = _count_lines(args.input)
    partial = args.output + PARTIAL_SUFFIX
    out = _open_partial(partial, args, embedder)
    progbar = None
    if progress:
        with contextlib.redirect_stdout(sys.stderr):
            progbar = keras.utils.Progbar(total, unit_name="line")
    with (
        out,
        open(
            args.input, encoding="utf-8", errors="surrogateescape", newline="\n"
        ) as f,
    ):
        size = args.batch_size * CHUNK_BATCHES
        for chunk in _chunks(enumerate(f), size):
            todo = _pending(chunk, embedder, args.layers, out)
            _embed_chunk(embedder, args, todo, out)
            out.flush()
            if progbar is not None:
                with contextlib.redirect_stdout(sys.stderr):
                    progbar.update(chunk[-1][0] + 1)
        stale = [k for k in out if not (k.isdigit() and int(k) < total)]
        for key in stale:
            del out[key]  # an old sentence_to_index, or lines now gone
        index = sentence_to_index_json(args.input)
        _ensure_room(out, [len(index)])
        index_dataset = out.create_dataset(
            SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype("utf-8")
        )
        index_dataset[0] = index
        for name in _RUN_ATTRS:
            del out.attrs[name]
    os.replace(partial, args.output)
    return total


def _pending(chunk, embedder, mode, out):
    """The `(index, tokens)` of a chunk's lines not already in `out`."""
    from keras_elmo.export.embed_lines import sentence_tokens

    todo = []
    for index, line in chunk:
        tokens = sentence_tokens(line)
        key = str(index)
        if key in out:
            if out[key].shape == _expected_shape(embedder, mode, len(tokens)):
                continue  # kept from the interrupted run
            del out[key]
        todo.append((index, tokens))
    return todo


def _embed_chunk(embedder, args, todo, out):
    """Embeds `(index, tokens)` pairs, batched by length, in line order."""
    _embed_batches(
        embedder, args, sorted(todo, key=lambda item: len(item[1])), out
    )


def _embed_batches(embedder, args, todo, out):
    """Embeds `(index, tokens)` pairs in consecutive batches of `todo`'s
    order and writes them in line order."""
    from keras_elmo.export.embed_lines import select_layers

    results = {}
    for start in range(0, len(todo), args.batch_size):
        batch = todo[start : start + args.batch_size]
        vectors = embedder([tokens for _, tokens in batch])
        for (index, _), layers in zip(batch, vectors):
            results[index] = select_layers(layers, args.layers)
    _ensure_room(out, [results[index].size * 4 for index in results])
    for index in sorted(results):
        out.create_dataset(str(index), data=results[index], dtype="float32")


def _ensure_room(out, sizes):
    """Checks that datasets of `sizes` bytes fit before HDF5 writes
    them (HDF5 may crash on a failed write; checked first, the partial
    file stays consistent for `--resume`)."""
    from keras_elmo.utils.write_faults import ensure_room

    out.flush()
    ensure_room(out.filename, sum(sizes) + 1024 * len(sizes) + (64 << 10))


def _embed_guarded(embedder, args):
    """`embed_file`; a full disk or an unwritable directory is an error
    naming OUTPUT.partial that says what is kept and how to resume."""
    from keras_elmo.utils import write_faults

    partial = args.output + PARTIAL_SUFFIX
    if os.path.exists(args.output):
        kept = f"{args.output!r} is unchanged"
    else:
        kept = f"nothing was written to {args.output!r}"
    with write_faults.guard(
        partial,
        kept=f"{kept}, the lines embedded so far stay in {partial!r}",
        advice="free space (or make the directory writable) and rerun "
        "with --resume to continue, or --force to start over",
    ):
        return embed_file(embedder, args)


def run(args):
    from keras_elmo.utils.validation import check_positive_int

    if args.spark_master:
        from keras_elmo.cli.embed_spark import run_spark

        return run_spark(args, loader=load_embedder_for_spark)
    if args.runner:
        from keras_elmo.cli.embed_beam import run_beam

        return run_beam(args, loader=load_embedder_for_spec)
    if getattr(args, "pipeline_options", None):
        raise ValueError(
            f"Unrecognized arguments {args.pipeline_options}: Beam pipeline "
            "options need --runner."
        )
    check_positive_int("--batch-size", args.batch_size)
    if not os.path.isfile(args.input):
        raise FileNotFoundError(f"Input file {args.input!r} not found.")
    if os.path.exists(args.output) and not args.force:
        raise FileExistsError(
            f"Output {args.output!r} exists; pass --force to overwrite it."
        )
    directory = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Output directory {directory!r} not found.")
    check_corpus_from_args(args, "input", args.input, require_sentences=False)
    embedder, description = load_embedder(args)
    sys.stderr.write(f"Embedding {args.input} with {description}\n")
    total = _embed_guarded(embedder, args)
    sys.stderr.write(f"Wrote {total} sentences to {args.output}\n")
    return 0
