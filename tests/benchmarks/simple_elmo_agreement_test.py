"""benchmarks/simple_elmo_agreement.py: its workload and its comparison,
run on the committed simple_elmo 0.9.2 outputs (the simple_elmo side
itself needs the side venv)."""

import shutil

import numpy as np
import pytest

from tests.benchmarks.scripts import load_benchmark
from tests.models import simple_elmo_fixture as fixture


@pytest.fixture(scope="module")
def script():
    return load_benchmark("simple_elmo_agreement")


def test_the_workload_is_ewt_the_longest_sentence_and_the_fixture(script):
    sentences, described = script.workload(6)
    every = script.conllu_sentences(script.EWT)
    assert len(every) == 12543  # UD English-EWT 1.2 train
    assert sentences[:3] == every[:3] and sentences[4:7] == every[3:6]
    assert len(sentences[3]) == described["longest_sentence"] == 159
    assert sentences[7:] == fixture.sentences()["vector_sentences"]
    assert described["sentences"] == 17
    assert described["tokens"] == sum(len(s) for s in sentences)


def test_compare_finds_simple_elmo_in_the_warmup_modes(
    script, reference_weights, tmp_path
):
    """On the committed simple_elmo outputs (tiny weights, batches of 4):
    every warm-up row agrees to 1e-5, the stateless default does not."""
    options, weights = reference_weights("tiny")
    shutil.copy(options, tmp_path / "options.json")
    shutil.copy(weights, tmp_path / "weights.hdf5")
    sentences = fixture.sentences()["vector_sentences"]
    result = script.compare(
        str(tmp_path), sentences, dict(fixture.vectors()), fixture.BATCH_SIZE
    )
    assert len(result) == 6
    for name, value in result.items():
        if name.startswith("stateless"):
            assert value["relative"] > 1e-2, name
        else:
            assert value["relative"] <= script.TARGET, (name, value)


def test_agreement_reads_real_tokens_only_and_refuses_other_shapes(script):
    theirs = np.zeros((2, 3, 4, 2), np.float32)
    theirs[0, :, :2] = 1.0
    theirs[1, :, :1] = 2.0
    theirs[:, :, 3] = 99.0  # padding: never read
    ours = [np.full((3, 2, 2), 1.5, np.float32), np.full((3, 1, 2), 2.0)]
    assert script.agreement(ours, theirs, [["a", "b"], ["c"]]) == {
        "max_abs_diff": 0.5,
        "relative": 0.25,
    }
    with pytest.raises(AssertionError, match="sentence 1"):
        script.agreement(ours, theirs, [["a", "b"], ["c", "d"]])
