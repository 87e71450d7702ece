"""Security checks: no unpickling anywhere, `.keras` files only through
`safe_mode=True`, and a `.keras` file with a Lambda layer is refused by
every loading path of the package without running its code."""

import os
import re

import keras
import pytest

from tests.robustness.case_table import REPO

PACKAGE = os.path.join(REPO, "keras_elmo")

# Patterns that would deserialize code or objects from a file.
FORBIDDEN = {
    "pickle": r"\b(c?pickle|dill|cloudpickle|shelve|joblib)\b",
    "marshal": r"\bmarshal\b",
    "allow_pickle=True": r"allow_pickle\s*=\s*True",
    "safe_mode=False": r"safe_mode\s*=\s*False",
    "eval/exec": r"(?<![\w.])(eval|exec)\s*\(",
    "yaml.load": r"yaml\.(unsafe_)?load\(",
    "torch.load": r"torch\.load\(",
}


# The one module allowed to name `pickle`: torch.save files are read by a
# `pickle.Unpickler` whose `find_class` resolves only a state dict's
# rebuild functions (issue 29); checked below and in
# tests/weights/torch_pickle_test.py.
RESTRICTED_UNPICKLER = os.path.join("keras_elmo", "weights", "torch_pickle.py")


def package_sources(exempt=()):
    for root, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                if os.path.relpath(path, REPO) in exempt:
                    continue
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, REPO), f.read()


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_no_code_or_object_deserialization_in_the_package(name):
    pattern = re.compile(FORBIDDEN[name])
    exempt = (RESTRICTED_UNPICKLER,) if name == "pickle" else ()
    hits = [
        f"{path}:{text[: m.start()].count(chr(10)) + 1}"
        for path, text in package_sources(exempt)
        for m in pattern.finditer(text)
    ]
    assert not hits, f"{name} found at {hits}"


def test_the_restricted_unpickler_is_the_only_pickle_use():
    with open(os.path.join(REPO, RESTRICTED_UNPICKLER), encoding="utf-8") as f:
        text = f.read()
    uses = set(re.findall(r"\bpickle\.(\w+)", text))
    # Only the Unpickler class (subclassed with a find_class allow-list)
    # and its error types; never pickle.load / pickle.loads.
    assert uses <= {"Unpickler", "UnpicklingError"}, uses
    assert "class _RestrictedUnpickler(pickle.Unpickler):" in text
    assert "def find_class(self, module, name):" in text


def test_the_scan_would_find_a_pickle():
    # The patterns are live: they match what they are meant to forbid.
    sample = "import pickle\nnp.load(f, allow_pickle=True)\neval(s)\n"
    for name in ("pickle", "allow_pickle=True", "eval/exec"):
        assert re.search(FORBIDDEN[name], sample), name


def test_every_keras_load_passes_safe_mode_true():
    calls = [
        (path, m.group(0))
        for path, text in package_sources()
        for m in re.finditer(r"(?<!def )load_model\([^)]*\)", text)
    ]
    assert calls  # the package does load .keras files
    for path, call in calls:
        assert "safe_mode=True" in call, (path, call)


@pytest.fixture(scope="module")
def lambda_file(tmp_path_factory):
    """A `.keras` file whose Lambda touches a marker file when it runs."""
    tmp = tmp_path_factory.mktemp("lambda")
    marker = tmp / "code_ran"
    # The marker path is a constant inside the lambda's own bytecode.
    function = eval(  # noqa: S307 - builds the malicious test fixture
        f"lambda x: (__import__('pathlib').Path({str(marker)!r}).touch(), x)[1]"
    )
    model = keras.Sequential([keras.Input((3,)), keras.layers.Lambda(function)])
    marker.unlink(missing_ok=True)
    path = str(tmp / "lambda.keras")
    model.save(path)
    return path, marker


def test_unsafe_load_would_run_the_lambda(lambda_file):
    """Control: the file really carries code (loading it unsafely runs
    it), so the refusals below are meaningful."""
    path, marker = lambda_file
    keras.saving.load_model(path, safe_mode=False)
    assert marker.exists()
    marker.unlink()


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "--from-keras", "{path}", "--to-keras", "{out}.keras"],
        ["export", "--model", "{path}", "--out", "{out}"],
        ["embed", "{input}", "{out}.hdf5", "--model", "{path}"],
    ],
    ids=["convert", "export", "embed"],
)
def test_cli_refuses_a_lambda_keras_file(lambda_file, tmp_path, cli, argv):
    path, marker = lambda_file
    source = tmp_path / "in.txt"
    source.write_text("a b\n")
    values = {"path": path, "out": str(tmp_path / "out"), "input": source}
    code, out, err = cli(*[a.format(**values) for a in argv])
    assert code == 2, (out, err)
    assert "Lambda" in err and "safe_mode" in err, err
    assert not marker.exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith("out")]
