"""The committed AllenNLP reference fixtures (see tests/fixtures/README.md)."""

import json
import os

import numpy as np

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def load_fixture(name):
    """A committed `.npz` fixture (no pickles)."""
    return np.load(os.path.join(FIXTURES, f"{name}.npz"), allow_pickle=False)


def unpack_rows(packed, lengths, steps):
    """`[N, ...]` valid rows -> `[B, steps, ...]` zero-padded."""
    out = np.zeros((len(lengths), steps) + packed.shape[1:], packed.dtype)
    start = 0
    for b, n in enumerate(lengths):
        out[b, :n] = packed[start : start + n]
        start += n
    return out


def sentences_of(fixture):
    return json.loads(str(fixture["sentences_json"]))
