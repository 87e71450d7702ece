"""The embedding engine: a text file, one sentence per line, into HDF5.

`embed_file(embedder, input_path, output_path, ...)` writes the layout of
AllenNLP's `allennlp elmo` command: for input line `i` (0-based), a float32
dataset `"i"` of shape `(L + 1, n_tokens, 2P)` for `layers="all"` (layer
0 is the token embedding twice, `[x; x]`), or `(n_tokens, 2P)` for `"top"`
(the last biLSTM layer) or `"average"` (the mean of the `L + 1` layers);
plus `sentence_to_index`, a 1-element string dataset holding the JSON
`{sentence: "i"}` (a repeated sentence maps to its last line); the root
attribute `keras_elmo_run` holds the run record (`run_identity`: model,
input, settings, version) as JSON. Lines are
read as `keras_elmo.embedding.batching` defines (BOM dropped, stripped,
`str.split()`); a blank line gives an empty dataset.

The input is read in chunks of `CHUNK_BATCHES * batch_size` lines, each
sorted by length into batches (less padding) and written back in line
order, so memory does not grow with the file. Each finished chunk is
committed to the journal folder `OUTPUT.partial/`
(`keras_elmo.embedding.journal`: a file fsynced then renamed), and at
the end the chunks are assembled into the HDF5 file that is renamed onto
OUTPUT. A kill at any instant loses at most the chunk in flight, and
`resume=True` continues from the committed chunks, after checking that
the model, the input's content, the settings and the package version
are those of the interrupted run (`keras_elmo.embedding.run_identity`; a
mismatch is refused, naming what changed). docs/CRASH_SAFETY.md states
the guarantee. A `KeyboardInterrupt` (Ctrl-C) is re-raised as
`write_faults.Interrupted`, saying how many lines are kept. OUTPUT is
never overwritten unless `force=True` (and never when it is the input,
`same_file`); an
OUTPUT that is a folder is refused before any work. A full disk, a file
size limit or an unwritable folder stops the run with a `WriteFailed`
naming OUTPUT.partial; OUTPUT is unchanged and a resumed run continues.

`keras-elmo embed`, `keras_elmo.Embedder.embed_file` and the benchmarks
all call this one function.

`sentence_to_index` is written in little memory (`sentence_to_index_json`):
AllenNLP builds `{sentence: str(line)}` with a dict, so a repeated
sentence keeps its first position in the JSON object and takes the index
of its last line. The same JSON bytes come from two passes over the
file: the first keeps a 16-byte digest per line (not the text), the
second streams the JSON. Memory is the JSON itself (which the format
stores as one string) plus about 40 bytes per line, instead of a dict of
every sentence.
"""

import hashlib
import io
import json
import os
import stat
import sys

import numpy as np

from keras_elmo.embedding import journal as embed_journal
from keras_elmo.embedding import run_identity
from keras_elmo.embedding.batching import check_layers
from keras_elmo.embedding.batching import embed_in_length_order
from keras_elmo.embedding.batching import select_layers
from keras_elmo.embedding.batching import sentence_text
from keras_elmo.embedding.batching import sentence_tokens
from keras_elmo.utils import atomic as write_faults
from keras_elmo.utils import check_positive_int
from keras_elmo.utils.atomic import check_not_an_input
from keras_elmo.utils.progress import progress_bar

CHUNK_BATCHES = 16  # batches per chunk read, sorted by length together
PARTIAL_SUFFIX = ".partial"
SENTENCE_TO_INDEX = embed_journal.SENTENCE_TO_INDEX


def check_paths(
    input_path, output_path, force=False, resume=False, current_run=None
):
    """Refuses, before any work, a missing input or one that is not a
    regular file, an output that is the input (even with `force`: a
    symlink or hard link to it too, `same_file`), an output that is a
    folder, an existing output without `force` (unless `resume` and it
    is the finished result of the run in OUTPUT.partial), or a missing
    folder.

    `current_run`: None, or a callable returning this run's `run_record`;
    with it, refusing an existing output that records its run adds what
    changed since (`existing_output_note`)."""
    _check_input_file(input_path)
    check_not_an_input(
        output_path, {"input_path": input_path}, argument="output_path"
    )
    if os.path.isdir(output_path):
        raise IsADirectoryError(
            f"Output {output_path!r} is a directory; expected the path of "
            "an HDF5 file (e.g. vectors.hdf5)."
        )
    finished = resume and embed_journal.finished_output(
        output_path + PARTIAL_SUFFIX, output_path
    )
    if os.path.exists(output_path) and not (force or finished):
        raise FileExistsError(
            f"Output {output_path!r} exists; pass `force=True` to overwrite "
            "it." + existing_output_note(output_path, current_run)
        )
    directory = os.path.dirname(os.path.abspath(output_path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"Output directory {directory!r} not found.")


def _check_input_file(input_path):
    """Refuses an input that is missing, a folder, or not a regular file
    (a FIFO, a socket, a device: it is read twice, counted then
    embedded), naming what it is."""
    try:
        mode = os.stat(input_path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(
            f"Input file `input_path` {input_path!r} not found."
        ) from None
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(
            f"Input `input_path` {input_path!r} is a directory; expected a "
            "text file, one sentence per line."
        )
    kinds = (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    kind = next((text for test, text in kinds if test(mode)), "a special file")
    raise ValueError(
        f"Input `input_path` {input_path!r} is not a regular file ({kind}); "
        "expected a text file, one sentence per line (it is read twice: "
        "save a stream to a file first)."
    )


def records_run(output_path):
    """Whether `output_path` is an HDF5 file that records the run which
    wrote it (`run_identity.RUN_ATTRIBUTE`); False for anything else,
    including a file h5py cannot open."""
    return bool(_recorded_run(output_path))


def existing_output_note(output_path, current_run=None):
    """The sentence a refusal to overwrite `output_path` adds: nothing
    for a file that is not a keras_elmo output; else whether it is a
    finished run of the same model, input, settings and version, or what
    changed since (`run_identity.finished_run_note`). `current_run` is a
    callable returning this run's `run_record`, called only when the
    output records a run; None: nothing is compared."""
    recorded = _recorded_run(output_path)
    if not recorded or current_run is None:
        return ""
    return run_identity.finished_run_note(recorded, current_run)


def _recorded_run(output_path):
    """The output's run record, or None (no record, not HDF5, unreadable,
    or not valid JSON)."""
    if not os.path.isfile(output_path):
        return None
    try:
        recorded = run_identity.hdf5_run_record(output_path)
    except (OSError, ValueError):
        return None
    return recorded if isinstance(recorded, dict) else None


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
        embedder: a runner (`keras_elmo.embedding.embedder`) or a
            `keras_elmo.Embedder`: called on a list of token lists (bytes),
            it returns one `[L + 1, n, 2P]` array per sentence, and has
            `num_layers`, `output_dim`, `max_tokens` and `identity` (a
            dict naming the model, which a resume compares).
        input_path: str. A UTF-8 text file, one sentence per line.
        output_path: str. The HDF5 file to write.
        layers: str. `"all"`, `"top"` or `"average"`.
        batch_size: int. Sentences per batch.
        resume: bool. Keep the chunks an interrupted run of the same model,
            input and settings committed to `OUTPUT.partial`.
        force: bool. Overwrite OUTPUT and discard an old `OUTPUT.partial`.
        progress: bool. Draw a Keras progress bar on stderr.

    Raises:
        ValueError: `resume` and `OUTPUT.partial` was started by another
            model, input, settings or version (the message names which).
        write_faults.WriteFailed: the disk filled up (or similar); what was
            written so far stays in `OUTPUT.partial` for `resume=True`.
    """
    check_layers(layers)
    check_positive_int("batch_size", batch_size)
    embed_journal.remove_trash(output_path)
    check_paths(
        input_path, output_path, force, resume,
        current_run=lambda: run_record(embedder, input_path, layers),
    )  # fmt: skip
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


def run_record(embedder, input_path, layers):
    """What `OUTPUT.partial` records of this run (`run_identity`)."""
    identity = getattr(embedder, "identity", None)
    if identity is None:
        kind = type(embedder)
        identity = {
            "kind": "unverified",
            "type": f"{kind.__module__}.{kind.__qualname__}",
        }
    settings = {
        "layers": layers,
        "num_layers": int(embedder.num_layers),
        "dim": int(embedder.output_dim),
        "dtype": "float32",
        "max_tokens": embedder.max_tokens,
    }
    return run_identity.run_record(
        identity, run_identity.input_identity(input_path), settings
    )


def _embed(
    embedder, input_path, output_path, layers, batch_size, resume, force,
    progress,
):  # fmt: skip
    partial = output_path + PARTIAL_SUFFIX
    total = _count_lines(input_path)
    journal = embed_journal.EmbedJournal(
        partial,
        run_record(embedder, input_path, layers),
        batch_size * CHUNK_BATCHES,
    )
    try:
        with write_faults.interrupted(
            lambda: _kept(journal, output_path, total)
        ):
            journal.open(resume, force)
            _fill(journal, embedder, input_path, output_path, layers,
                  batch_size, total, progress)  # fmt: skip
    finally:
        journal.close()
    return total


def _kept(journal, output_path, total):
    """What an interrupted run kept, and how to go on (for `Interrupted`)."""
    if not journal.opened:
        return f"nothing was written; {output_path!r} is as it was"
    if not os.path.isdir(journal.partial):  # published, then cleaned up
        return f"{output_path!r} is complete ({total:,} lines)"
    if os.path.isfile(journal.path(embed_journal.ASSEMBLED)):
        kept = total
    else:
        kept = sum(
            max(0, min(journal.chunk_lines, total - k * journal.chunk_lines))
            for k in journal.committed_chunks()
        )
    return (
        f"{kept:,} of {total:,} lines are kept in {journal.partial!r}; "
        "rerun with `resume=True` (same input, output, model and settings) "
        "to continue"
    )


def _fill(
    journal, embedder, input_path, output_path, layers, batch_size, total,
    progress,
):  # fmt: skip
    """Embeds the chunks not committed yet, assembles and publishes."""
    if embed_journal.finished_output(journal.partial, output_path):
        journal.publish(output_path)  # a kill came after the rename
        return
    progbar = None
    if progress:
        progbar = progress_bar(total, unit_name="line", stream=sys.stderr)
    try:
        if not os.path.isfile(journal.path(embed_journal.ASSEMBLED)):
            _fill_chunks(
                journal, embedder, input_path, layers, batch_size, progbar
            )
            journal.assemble(total, sentence_to_index_json(input_path))
    except KeyboardInterrupt:
        if progbar is not None:
            sys.stderr.write("\n")  # end the bar's line
        raise
    journal.publish(output_path)


def _fill_chunks(journal, embedder, input_path, layers, batch_size, progbar):
    """Embeds and commits the chunks not committed yet."""
    with open(
        input_path, encoding="utf-8", errors="surrogateescape", newline="\n"
    ) as f:
        chunks = _chunks(enumerate(f), journal.chunk_lines)
        for number, chunk in enumerate(chunks):
            start, count = chunk[0][0], len(chunk)
            digest = _chunk_digest(chunk)
            if not journal.has_chunk(number, start, count, digest):
                todo = [(i, sentence_tokens(line)) for i, line in chunk]
                arrays = {}
                _embed_chunk(embedder, todo, layers, batch_size, arrays)
                journal.commit_chunk(number, start, digest, arrays)
            if progbar is not None:
                progbar.update(chunk[-1][0] + 1)


def _chunk_digest(chunk):
    digest = hashlib.sha256()
    for _, line in chunk:
        digest.update(line.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


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


def _embed_chunk(embedder, todo, mode, batch_size, out):
    """Embeds `(index, tokens)` pairs, batched by length, into `out`
    (a dict: line index -> array)."""
    _embed_batches(embedder, todo, mode, batch_size, out, sort=True)


def _embed_batches(embedder, todo, mode, batch_size, out, sort=False):
    """Embeds `(index, tokens)` pairs into `out`; without `sort`, in
    consecutive batches of `todo`'s order (the benchmark's comparison)."""
    vectors = embed_in_length_order(
        embedder,
        [tokens for _, tokens in todo],
        batch_size,
        each=lambda layers: select_layers(layers, mode),
        sort=sort,
    )
    out.update(zip((index for index, _ in todo), vectors))


def read_sentences(path):
    """Yields each line of `path`, stripped, as `keras-elmo embed` reads it
    (a UTF-8 byte-order mark at the start of a line dropped)."""
    with open(
        path, encoding="utf-8", errors="surrogateescape", newline="\n"
    ) as f:
        for line in f:
            yield sentence_text(line)


def _digest(sentence):
    data = sentence.encode("utf-8", "surrogateescape")
    return hashlib.blake2b(data, digest_size=16).digest()


def sentence_to_index_json(path):
    """The JSON bytes of `{sentence: "index"}` for the lines of `path`.

    Equal to `json.dumps(d).encode()` where `d[line.strip()] = str(i)` is
    filled in line order.
    """
    digests = bytearray()
    for sentence in read_sentences(path):
        digests += _digest(sentence)
    count = len(digests) // 16
    if count == 0:
        return b"{}"
    keys = np.frombuffer(bytes(digests), dtype=np.uint64).reshape(count, 2)
    del digests
    _, first, inverse = np.unique(
        keys, axis=0, return_index=True, return_inverse=True
    )
    _, last_reversed = np.unique(keys[::-1], axis=0, return_index=True)
    del keys
    last = count - 1 - last_reversed  # both sorted by the same unique keys
    inverse = inverse.reshape(-1)
    is_first = np.zeros(count, bool)
    is_first[first] = True
    out = io.BytesIO()
    out.write(b"{")
    separator = b""
    for line, sentence in enumerate(read_sentences(path)):
        if not is_first[line]:
            continue
        value = int(last[inverse[line]])
        key = json.dumps(sentence).encode("ascii")
        out.write(separator + key + b": " + f'"{value}"'.encode())
        separator = b", "
    out.write(b"}")
    return out.getvalue()
