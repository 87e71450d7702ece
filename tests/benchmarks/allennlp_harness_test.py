"""The AllenNLP side harness lives in the repository: the side by side
runs the copy in tools/allennlp_ref, and its weights come from the
generator the parity fixtures were made with."""

import os

import h5py

from tests.benchmarks.scripts import REPO
from tests.benchmarks.scripts import load_benchmark
from tests.fixtures.weights_digest import expected_digest
from tests.fixtures.weights_digest import weights_digest

HARNESS = os.path.join(REPO, "tools", "allennlp_ref")


def test_the_side_by_side_runs_the_harness_of_the_repository():
    side_by_side = load_benchmark("allennlp_side_by_side")
    args = side_by_side.parse_args([])
    assert os.path.samefile(args.ref_dir, HARNESS)
    for name in ("bench_allennlp.py", "allennlp_ref.py", "setup_ref.sh"):
        assert os.path.isfile(os.path.join(args.ref_dir, name)), name


def test_the_harness_makes_its_weights_with_the_fixtures_generator():
    with open(os.path.join(HARNESS, "bench_allennlp.py")) as f:
        bench = f.read()
    with open(os.path.join(HARNESS, "run_all.sh")) as f:
        run_all = f.read()
    assert 'HERE, "..", "..", "tests", "fixtures", "make_weights.py"' in bench
    assert '"$HERE/../../tests/fixtures/make_weights.py"' in run_all
    assert os.path.isfile(
        os.path.join(
            HARNESS, "..", "..", "tests", "fixtures", "make_weights.py"
        )
    )


def test_missing_weights_are_written_by_the_fixtures_generator(tmp_path):
    side_by_side = load_benchmark("allennlp_side_by_side")
    options, weights = side_by_side.ensure_weights(str(tmp_path), "tiny")
    assert os.path.isfile(options)
    with h5py.File(weights, "r") as f:
        # `tiny`: 32 cells projected to 16, [input + projection, 4 x cells].
        kernel = f["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_0"]
        assert kernel.shape == (32, 128)
    digest = weights_digest(weights)
    assert digest == expected_digest("tiny")
    # Written once: a second call leaves the file as it is.
    side_by_side.ensure_weights(str(tmp_path), "tiny")
    assert weights_digest(weights) == digest
