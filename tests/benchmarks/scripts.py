"""Loads a script of benchmarks/ as a module, as `python benchmarks/X.py`
would (its folder first on `sys.path`, for its sibling imports)."""

import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
BENCHMARKS = os.path.join(REPO, "benchmarks")
SAMPLE = os.path.join(REPO, "tests", "data", "en_pd_lm_sample.txt.gz")


def load_benchmark(name):
    if BENCHMARKS not in sys.path:
        sys.path.insert(0, BENCHMARKS)
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(BENCHMARKS, f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
