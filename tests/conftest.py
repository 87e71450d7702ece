"""Shared pytest fixtures: the AllenNLP reference weights."""

import os
import subprocess
import sys

import pytest

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
sys.path.insert(0, FIXTURES)

from weights_digest import expected_digest  # noqa: E402
from weights_digest import weights_digest  # noqa: E402


@pytest.fixture(scope="session")
def reference_weights(tmp_path_factory):
    """`name -> (options_path, weights_path)`, regenerated on demand.

    The seeded random weights AllenNLP was run on are rebuilt with the
    committed copy of the harness's `make_weights.py` and checked against
    the committed content digest, so the parity tests compare against the
    exact file AllenNLP read.
    """
    out_dir = tmp_path_factory.mktemp("reference_weights")
    made = {}

    def get(name):
        if name not in made:
            base, activation = name, "relu"
            if name.endswith("_tanh"):
                base, activation = name[: -len("_tanh")], "tanh"
            subprocess.run(
                [
                    sys.executable,
                    os.path.join(FIXTURES, "make_weights.py"),
                    base,
                    "--activation",
                    activation,
                    "--out-dir",
                    str(out_dir),
                ],
                check=True,
                capture_output=True,
            )
            options = out_dir / f"{name}_options.json"
            weights = out_dir / f"{name}_weights.hdf5"
            assert weights_digest(weights) == expected_digest(name), name
            made[name] = (str(options), str(weights))
        return made[name]

    return get
