"""The committed simple_elmo 0.9.2 outputs (tests/fixtures/simple_elmo/)."""

import json
import os

import numpy as np

FIXTURE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    "fixtures",
    "simple_elmo",
)
BATCH_SIZE = 4  # simple_elmo's max_batch_size when the fixture was made


def sentences():
    with open(os.path.join(FIXTURE, "sentences.json"), encoding="utf-8") as f:
        return json.load(f)


def vectors():
    return np.load(os.path.join(FIXTURE, "vectors.npz"), allow_pickle=False)


def substitutes():
    path = os.path.join(FIXTURE, "substitutes.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def path(name):
    return os.path.join(FIXTURE, name)


def relative_error(ours, reference):
    """max |ours - reference| / max |reference|."""
    reference = np.asarray(reference, np.float64)
    diff = np.abs(np.asarray(ours, np.float64) - reference).max()
    return diff / np.abs(reference).max()
