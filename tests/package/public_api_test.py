"""The public API: every path it promises imports, every example runs.

Checks every path the export decorator recorded, every name in an
`__all__`, every `keras_elmo.x.Y` a docstring or message cites, and runs
the `>>>` examples of the docstrings (as keras-hub's docstring test does).
"""

import doctest
import gzip
import importlib
import os
import pkgutil
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_elmo
from keras_elmo import api_export

PACKAGE_DIR = os.path.dirname(os.path.abspath(keras_elmo.__file__))
CITED = re.compile(r"\bkeras_elmo(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _module_names():
    return ["keras_elmo"] + [
        info.name
        for info in pkgutil.walk_packages([PACKAGE_DIR], prefix="keras_elmo.")
    ]


MODULES = _module_names()


def resolve(path):
    """The object a dotted path names: its longest importable module
    prefix, then attributes; raises if neither resolves."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        name = ".".join(parts[:split])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if not (name == e.name or name.startswith(f"{e.name}.")):
                raise  # a missing dependency, not a missing path
            continue
        for attribute in parts[split:]:
            obj = getattr(obj, attribute)
        return obj
    raise ModuleNotFoundError(path)


def test_resolve_rejects_a_missing_path():
    assert resolve("keras_elmo.layers.Highway") is keras_elmo.layers.Highway
    with pytest.raises(AttributeError):
        resolve("keras_elmo.layers.NoSuchLayer")


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports(name):
    importlib.import_module(name)


def test_every_exported_path_names_its_symbol():
    for name in MODULES:
        importlib.import_module(name)
    assert "keras_elmo.ElmoLayer" in api_export.EXPORTS
    assert "keras_elmo.layers.ElmoLayer" in api_export.EXPORTS
    for path, symbol in api_export.EXPORTS.items():
        assert resolve(path) is symbol, path


def test_every_name_in_all_exists():
    for name in MODULES:
        module = importlib.import_module(name)
        for attribute in getattr(module, "__all__", []):
            assert hasattr(module, attribute), f"{name}.{attribute}"
    assert keras_elmo.ElmoLayer is keras_elmo.layers.ElmoLayer
    assert "ElmoLayer" in keras_elmo.layers.__all__


def _cited_paths():
    cited = {}
    for root, _, files in os.walk(PACKAGE_DIR):
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(root, file)
                with open(path, encoding="utf-8") as f:
                    for path_cited in CITED.findall(f.read()):
                        cited.setdefault(path_cited, path)
    return cited


def test_every_cited_path_imports():
    cited = _cited_paths()
    assert "keras_elmo.layers.ElmoLayer" in cited
    broken = []
    for path, where in sorted(cited.items()):
        try:
            resolve(path)
        except (ImportError, AttributeError) as e:
            broken.append(f"{path} (cited in {where}): {e}")
    assert broken == []


@pytest.fixture
def example_files(tmp_path, monkeypatch):
    """The files the examples name (`vocab.txt`, `train/*.txt.gz`), in a
    fresh working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\n<UNK>\nthe\ncat\n")
    (tmp_path / "train").mkdir()
    with gzip.open(tmp_path / "train" / "a.txt.gz", "wt") as f:
        f.write("the cat sat\nthe dog\n")
    return tmp_path


def _docstring_modules():
    names = []
    for name in MODULES:
        path = importlib.util.find_spec(name).origin
        with open(path, encoding="utf-8") as f:
            if ">>>" in f.read():
                names.append(name)
    return names


@pytest.mark.parametrize("name", _docstring_modules())
def test_docstring_examples_run(name, example_files):
    module = importlib.import_module(name)
    globs = {"keras_elmo": keras_elmo, "keras": keras, "np": np, "tf": tf}
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    examples = 0
    for test in finder.find(module, globs=globs):
        keras.utils.set_random_seed(0)
        runner.run(test)
        examples += len(test.examples)
    result = runner.summarize(verbose=False)
    assert examples > 0
    assert result.failed == 0, f"{result.failed} failing examples in {name}"
