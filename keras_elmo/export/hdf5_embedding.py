"""The embedding engine: a text file, one sentence per line, into HDF5.

`embed_file(embedder, input_path, output_path, ...)` writes the layout of
AllenNLP's `allennlp elmo` command: for input line `i` (0-based), a float32
dataset `"i"` of shape `(L + 1, n_tokens, 2P)` for `layers="all"` (layer
0 is the token embedding twice, `[x; x]`), or `(n_tokens, 2P)` for `"top"`
(the last biLSTM layer) or `"average"` (the mean of the `L + 1` layers);
plus `sentence_to_index`, a 1-element string dataset holding the JSON
`{sentence: "i"}` (a repeated sentence maps to its last line). Lines are
read as `keras_elmo.export.embed_lines` defines (BOM dropped, stripped,
`str.split()`); a blank line gives an empty dataset.

The input is read in chunks of `CHUNK_BATCHES * batch_size` lines, each
sorted by length into batches (less padding) and written back in line
order, so memory does not grow with the file. Output goes to
`OUTPUT.partial`, renamed to OUTPUT at the end; with `resume=True` the
datasets already in `OUTPUT.partial` are kept and the rest computed.
OUTPUT is never overwritten unless `force=True`; an OUTPUT that is a
folder is refused before any work. A full disk, a file size limit or an
unwritable folder stops the run with a `WriteFailed` naming
OUTPUT.partial; OUTPUT is unchanged and a resumed run continues.

`keras-elmo embed`, `keras_elmo.Embedder.embed_file` and the benchmarks
all call this one function.
"""

import contextlib
import os
import sys

from keras_elmo.export.embed_lines import LAYER_MODES
from keras_elmo.export.embed_lines import select_layers
from keras_elmo.export.embed_lines import sentence_tokens
from keras_elmo.export.sentence_index import sentence_to_index_json
from keras_elmo.utils import write_faults
from keras_elmo.utils.validation import check_positive_int
from keras_elmo.weights.hdf5_ports import FileKind
from keras_elmo.weights.hdf5_ports import open_hdf5

CHUNK_BATCHES = 16  # batches per chunk read, sorted by length together
PARTIAL_SUFFIX = ".partial"
SENTENCE_TO_INDEX = "sentence_to_index"
_RUN_ATTRS = ("keras_elmo_layers", "keras_elmo_num_layers", "keras_elmo_dim")


def check_paths(input_path, output_path, force=False):
    """Refuses, before any work, a missing input, an output that is a
    folder, an existing output without `force`, or a missing folder."""
    if not os.path.isfile(input_path):
        raise FileNotFoundError(f"Input file {input_path!r} not found.")
    if os.path.isdir(output_path):
        raise IsADirectoryError(
            f"Output {output_path!r} is a directory; expected the path of "
            "an HDF5 file (e.g. vectors.hdf5)."
        )
    if os.path.exists(output_path) and not force:
        raise FileExistsError(
            f"Output {output_path!r} exists; pass `force=True` to overwrite it."
        )
    directory = os.path.dirname(os.path.abspath(output_path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Output directory {directory!r} not found.")


def embed_file(
    embedder,
    input_path,
    output_path,
    layers="all",
    batch_size=64,
    resume=False,
    force=False,
    progress=False,
):
    """Embeds `input_path` into `output_path`; returns the line count.

    Args:
        embedder: a runner (`keras_elmo.export.embedding_runners`) or a
            `keras_elmo.Embedder`: called on a list of token lists (bytes),
            it returns one `[L + 1, n, 2P]` array per sentence, and has
            `num_layers`, `output_dim` and `max_tokens`.
        input_path: str. A UTF-8 text file, one sentence per line.
        output_path: str. The HDF5 file to write.
        layers: str. `"all"`, `"top"` or `"average"`.
        batch_size: int. Sentences per batch.
        resume: bool. Keep what an interrupted run left in
            `OUTPUT.partial`.
        force: bool. Overwrite OUTPUT and discard an old `OUTPUT.partial`.
        progress: bool. Draw a Keras progress bar on stderr.

    Raises:
        write_faults.WriteFailed: the disk filled up (or similar); what was
            written so far stays in `OUTPUT.partial` for `resume=True`.
    """
    if layers not in LAYER_MODES:
        raise ValueError(
            "Received an invalid value for argument `layers`, expected one "
            f"of {LAYER_MODES}, got {layers!r}."
        )
    check_positive_int("batch_size", batch_size)
    check_paths(input_path, output_path, force)
    partial = output_path + PARTIAL_SUFFIX
    if os.path.exists(output_path):
        kept = f"{output_path!r} is unchanged"
    else:
        kept = f"nothing was written to {output_path!r}"
    with write_faults.guard(
        partial,
        kept=f"{kept}, the lines embedded so far stay in {partial!r}",
        advice="free space (or make the directory writable) and rerun "
        "with `resume=True` to continue, or `force=True` to start over",
    ):
        return _embed(
            embedder, input_path, output_path, layers, batch_size, resume,
            force, progress,
        )  # fmt: skip


def _embed(
    embedder, input_path, output_path, layers, batch_size, resume, force,
    progress,
):  # fmt: skip
    import h5py
    import keras

    total = _count_lines(input_path)
    partial = output_path + PARTIAL_SUFFIX
    out = _open_partial(partial, layers, embedder, resume, force)
    progbar = None
    if progress:
        with contextlib.redirect_stdout(sys.stderr):
            progbar = keras.utils.Progbar(total, unit_name="line")
    with (
        out,
        open(
            input_path, encoding="utf-8", errors="surrogateescape", newline="\n"
        ) as f,
    ):
        for chunk in _chunks(enumerate(f), batch_size * CHUNK_BATCHES):
            todo = _pending(chunk, embedder, layers, out)
            _embed_chunk(embedder, todo, layers, batch_size, out)
            out.flush()
            if progbar is not None:
                with contextlib.redirect_stdout(sys.stderr):
                    progbar.update(chunk[-1][0] + 1)
        stale = [k for k in out if not (k.isdigit() and int(k) < total)]
        for key in stale:
            del out[key]  # an old sentence_to_index, or lines now gone
        index = sentence_to_index_json(input_path)
        _ensure_room(out, [len(index)])
        index_dataset = out.create_dataset(
            SENTENCE_TO_INDEX, (1,), dtype=h5py.string_dtype("utf-8")
        )
        index_dataset[0] = index
        for name in _RUN_ATTRS:
            del out.attrs[name]
    os.replace(partial, output_path)
    return total


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


def _open_partial(partial, layers, embedder, resume, force):
    import h5py

    run_attrs = (layers, embedder.num_layers, embedder.output_dim)
    if os.path.exists(partial) and resume:
        start_over = "; pass `force=True` (without `resume`) to start over"
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
                "or pass `force=True` (without `resume`) to start over."
            )
    else:
        if os.path.exists(partial) and not force:
            raise FileExistsError(
                f"An interrupted run left {partial!r}; pass `resume=True` "
                "to continue it or `force=True` to start over."
            )
        out = h5py.File(partial, "w")
    for name, value in zip(_RUN_ATTRS, run_attrs):
        out.attrs[name] = value
    return out


def _pending(chunk, embedder, mode, out):
    """The `(index, tokens)` of a chunk's lines not already in `out`."""
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


def _embed_chunk(embedder, todo, mode, batch_size, out):
    """Embeds `(index, tokens)` pairs, batched by length, in line order."""
    todo = sorted(todo, key=lambda item: len(item[1]))
    _embed_batches(embedder, todo, mode, batch_size, out)


def _embed_batches(embedder, todo, mode, batch_size, out):
    """Embeds `(index, tokens)` pairs in consecutive batches of `todo`'s
    order and writes them in line order."""
    results = {}
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        vectors = embedder([tokens for _, tokens in batch])
        for (index, _), layers in zip(batch, vectors):
            results[index] = select_layers(layers, mode)
    _ensure_room(out, [results[index].size * 4 for index in results])
    for index in sorted(results):
        out.create_dataset(str(index), data=results[index], dtype="float32")


def _ensure_room(out, sizes):
    """Checks that datasets of `sizes` bytes fit before HDF5 writes
    them (HDF5 may crash on a failed write; checked first, the partial
    file stays consistent for a resumed run)."""
    out.flush()
    write_faults.ensure_room(
        out.filename, sum(sizes) + 1024 * len(sizes) + (64 << 10)
    )
