"""The built wheel works on its own: installed into a fresh venv outside
the repository, `keras-elmo demo` runs and the biLM matches AllenNLP.

The wheel is built offline (`pip wheel --no-build-isolation --no-deps`,
with this venv's setuptools) from a copy of the sources, so the checkout
gets no `build/` folder. The fresh venv has no pip and no packages: the
wheel goes in with this venv's pip (`--python`), and a `.pth` file lends
it this venv's site-packages for TensorFlow and the other dependencies
(nothing is downloaded). `.pth` files of a folder named that way are not
run, so the editable install of the checkout is not visible there, and
the commands run from a directory outside the repository.
"""

import glob
import os
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

from tests.models.bilm_parity_test import assert_close_to_reference
from tests.reference_data import load_fixture
from tests.reference_data import sentences_of
from tests.reference_data import unpack_rows

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
SOURCES = ["keras_elmo", "setup.cfg", "pyproject.toml", "README.md"]

PARITY = """
import sys
import numpy as np
import keras_elmo
from keras_elmo.models.bilm import elmo_layers
options, weights, out = sys.argv[1:]
assert "site-packages" in keras_elmo.__file__, keras_elmo.__file__
ids = np.load(out + ".in.npy")
bilm = keras_elmo.BiLM.from_allennlp(options, weights)
layers = [np.asarray(x) for x in elmo_layers(bilm(ids))]
np.save(out, np.stack(layers, axis=1))
print(keras_elmo.__file__)
"""


def _run(args, cwd, env=None):
    result = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """`(python, keras-elmo command, env, workdir)` of a fresh venv with
    only the wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        path = os.path.join(REPO, name)
        if os.path.isdir(path):
            shutil.copytree(
                path,
                source / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
            )
        else:
            shutil.copy(path, source / name)
    wheels = root / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index"]
        + ["--no-build-isolation", "-q", "-w", str(wheels), str(source)],
        cwd=root,
    )
    (wheel,) = glob.glob(str(wheels / "keras_elmo-*.whl"))
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root)
    python = str(venv / "bin" / "python")
    site = _run(
        [
            python,
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        cwd=root,
    ).strip()
    with open(os.path.join(site, "lend_test_venv.pth"), "w") as f:
        f.write(sysconfig.get_path("purelib") + "\n")
    _run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q"]
        + ["--no-deps", "--no-index", wheel],
        cwd=root,
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    work = root / "elsewhere"
    work.mkdir()
    return python, str(venv / "bin" / "keras-elmo"), env, str(work)


@pytest.mark.large
def test_wheel_holds_presets_and_testing(installed):
    python, _, env, work = installed
    code = (
        "import keras_elmo, keras_elmo.testing, os; "
        "from keras_elmo.presets import available_presets; "
        "print(available_presets()); print(keras_elmo.__file__)"
    )
    out = _run([python, "-c", code], cwd=work, env=env)
    assert "elmo_small_en" in out
    assert REPO not in out.splitlines()[-1]


@pytest.mark.large
def test_installed_demo_runs(installed):
    _, command, env, work = installed
    out = _run([command, "demo"], cwd=work, env=env)
    assert "elmo_small_en" in out


@pytest.mark.large
def test_installed_bilm_matches_allennlp(
    installed, reference_weights, tmp_path
):
    python, _, env, work = installed
    ref = load_fixture("tiny")
    import keras_elmo

    ids = keras_elmo.batch_to_ids(sentences_of(ref))
    out = str(tmp_path / "layers.npy")
    np.save(out + ".in.npy", ids)
    options, weights = reference_weights("tiny")
    printed = _run(
        [python, "-c", PARITY, options, weights, out], cwd=work, env=env
    )
    assert REPO not in printed
    actual = np.load(out)
    lengths, steps = ref["lengths"], ids.shape[1]
    expected = unpack_rows(ref["activations"], lengths, steps)
    expected = expected.transpose(0, 2, 1, 3)
    for layer in range(3):
        assert_close_to_reference(
            actual[:, layer], expected[:, layer], f"tiny layer {layer}"
        )
