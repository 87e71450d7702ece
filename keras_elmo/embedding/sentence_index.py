"""`sentence_to_index` of the `allennlp elmo` HDF5 layout, in little memory.

AllenNLP builds `{sentence: str(line)}` with a dict, so a repeated
sentence keeps its first position in the JSON object and takes the index
of its last line. This module writes the same JSON bytes from two passes
over the file: the first keeps a 16-byte digest per line (not the text),
the second streams the JSON. Memory is the JSON itself (which the format
stores as one string) plus about 40 bytes per line, instead of a dict of
every sentence.
"""

import hashlib
import io
import json

import numpy as np

from keras_elmo.embedding.embed_lines import sentence_text


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
