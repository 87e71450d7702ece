"""docs/MIGRATION.md, "From simple_elmo": every keras_elmo cell runs.

The cells (the first code span of each row's keras_elmo column) are read
from the document and executed in order in one namespace, in a folder
whose `model_dir/` holds the seeded `tiny` weights (as `model.hdf5`, the
name simple_elmo uses, and `weights.hdf5`) with the simple_elmo
fixture's softmax and vocabulary; `sentences` and `raw` are the
fixture's. Each result is then checked against simple_elmo 0.9.2's
output for the call in the same row (tests/fixtures/simple_elmo/
vectors_b32.npz: its default `max_batch_size=32`, one batch) or a NumPy
re-derivation.
"""

import os
import re
import shutil

import numpy as np
import pytest

import keras_elmo
from tests.models import simple_elmo_fixture as fixture

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START = "<!-- simple_elmo rows"
END = "<!-- end simple_elmo rows -->"
TOLERANCE = 1e-5


def migration_rows():
    with open(
        os.path.join(REPO, "docs", "MIGRATION.md"), encoding="utf-8"
    ) as f:
        text = f.read()
    block = text[text.index(START) : text.index(END)]
    rows = [line for line in block.splitlines() if line.startswith("| ")]
    cells = []
    for row in rows[1:]:  # the header
        columns = [c.strip() for c in row.strip("|").split(" | ")]
        assert len(columns) == 3, row
        code = re.findall(r"`([^`]+)`", columns[1])
        assert code, row
        cells.append((columns[0], code[0]))
    return cells


@pytest.fixture(scope="module")
def namespace(reference_weights, tmp_path_factory):
    folder = tmp_path_factory.mktemp("migration")
    model_dir = folder / "model_dir"
    model_dir.mkdir()
    options, weights = reference_weights("tiny")
    shutil.copy(options, model_dir / "options.json")
    shutil.copy(weights, model_dir / "model.hdf5")
    shutil.copy(weights, model_dir / "weights.hdf5")
    shutil.copy(fixture.path("softmax.hdf5"), model_dir / "softmax.hdf5")
    shutil.copy(fixture.path("vocab.txt"), model_dir / "vocab.txt")
    sentences = fixture.sentences()
    names = {
        "keras_elmo": keras_elmo,
        "np": np,
        "sentences": sentences["vector_sentences"],
        "raw": [" ".join(s) for s in sentences["substitute_sentences"]],
    }
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        for _, code in migration_rows():
            exec(code, names)
    finally:
        os.chdir(cwd)
    return names


def reference():
    return np.load(fixture.path("vectors_b32.npz"), allow_pickle=False)


def test_every_row_has_a_cell_and_none_was_dropped():
    rows = migration_rows()
    assert len(rows) == 11
    assert all(code.strip() for _, code in rows)


def test_load(namespace):
    assert isinstance(namespace["emb"], keras_elmo.Embedder)
    assert namespace["emb"].warmup is None


def _lengths(namespace):
    return [len(s) for s in namespace["sentences"]]


def test_vectors_top_and_average(namespace):
    """One batch with no warm-up is where simple_elmo starts from zero
    states: there the stateless default equals it."""
    theirs = reference()["vectors_all_no_warmup"]
    vectors = namespace["vectors"]
    assert len(vectors) == 10
    for b, n in enumerate(_lengths(namespace)):
        assert vectors[b].shape == (3, n, 32)
        error = fixture.relative_error(vectors[b], theirs[b, :, :n])
        assert error <= TOLERANCE, b
        np.testing.assert_array_equal(namespace["top"][b], vectors[b][-1])
        np.testing.assert_allclose(
            namespace["average"][b], vectors[b].mean(axis=0), atol=1e-7
        )


def test_sentence_vectors(namespace):
    expected = np.stack([v.mean(axis=0) for v in namespace["average"]])
    np.testing.assert_allclose(namespace["mean"], expected, atol=1e-6)
    unit = namespace["unit"]
    np.testing.assert_allclose(np.linalg.norm(unit, axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(
        unit * np.linalg.norm(expected, axis=-1, keepdims=True),
        expected,
        atol=1e-6,
    )


def test_batching_and_no_session(namespace):
    vectors = namespace["vectors"]
    assert len(namespace["small_batches"]) == len(vectors)
    for a, b, c in zip(namespace["small_batches"], vectors, namespace["again"]):
        np.testing.assert_allclose(a, b, atol=1e-5)
        np.testing.assert_array_equal(c, b)


def test_warmup_reproduces_simple_elmo(namespace):
    theirs = reference()
    assert namespace["warm_emb"].batch_size == 32
    for b, (mine, n) in enumerate(zip(namespace["warm"], _lengths(namespace))):
        assert mine.shape == (3, n, 32)
        error = fixture.relative_error(mine, theirs["vectors_all"][b, :, :n])
        assert error <= TOLERANCE, b
    error = fixture.relative_error(
        namespace["warm_sentences"], theirs["sentence_top"]
    )
    assert error <= TOLERANCE
    # and the stateless default does not: simple_elmo ran the batch twice
    n = _lengths(namespace)[0]
    stateless = namespace["vectors"][0]
    assert (
        fixture.relative_error(stateless, theirs["vectors_all"][0, :, :n]) > 0.1
    )


def test_substitutes(namespace):
    got = namespace["substitutes"]
    theirs = fixture.substitutes()
    assert len(got) == len(theirs) == 4
    for mine, ref in zip(got, theirs):
        assert len(mine) == len(ref) == 6
        # the first word forward is predicted from <S> alone in both
        assert set(mine[0]["forward"]["candidates"]) == set(
            ref[0]["forward"]["candidates"]
        )
        for token in mine:
            logp = token["forward"]["logp"]
            assert logp == sorted(logp, reverse=True) and logp[0] < 0.0
