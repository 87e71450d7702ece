"""Every code block of README.md runs as written.

Python blocks run in a fresh process in an empty folder (so they need
nothing but the clone), with the download cache in a temporary folder
and AllenNLP's hosts replaced by a local HTTP mirror on 127.0.0.1
(`KERAS_ELMO_PRESET_MIRROR`) serving a model with the published
architecture and random weights. A `print(x)  # VALUE` line must print
VALUE. Shell blocks: `keras-elmo ...` lines run in order in one folder
holding the files they name, each in a process of its own
(`markdown_blocks.keras_elmo`); `make TARGET` is checked with `make -n`
(running it would install a venv and, for `make test`, rerun this suite:
CI's `.ci/run` runs `make test` itself); `pip install .` installs the
clone (the package is not on the index).
"""

import gzip
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.docs.markdown_blocks import REPO
from tests.docs.markdown_blocks import code_blocks
from tests.docs.markdown_blocks import keras_elmo

README = os.path.join(REPO, "README.md")
PRINTED = re.compile(r"^print\(.*\)\s+# (?P<value>\S[^:]*?)(?::.*)?$")


def blocks(lang):
    """The code of README.md's `lang` blocks, in order."""
    return [c for _, kind, c, _ in code_blocks("README.md") if kind == lang]


def _env(tmp_path, **extra):
    env = dict(os.environ)
    env.pop("KERAS_ELMO_PRESET_MIRROR", None)
    env.update(
        PYTHONPATH=REPO,
        KERAS_ELMO_CACHE=str(tmp_path / "cache"),
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    env.update(extra)
    return env


def _expected_prints(code):
    values = []
    for line in code.splitlines():
        match = PRINTED.match(line.strip())
        if match:
            values.append(match.group("value").strip())
    return values


def _run_python(code, tmp_path, **env):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env=_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # Keras' download progress also goes to stdout: the prints come last.
    printed = done.stdout.splitlines()
    expected = _expected_prints(code)
    assert expected and printed[-len(expected) :] == expected, (
        printed[-10:],
        expected,
    )


def test_readme_has_the_blocks_this_test_knows():
    python = blocks("python")
    assert len(python) == 4
    assert 'Embedder.from_preset("elmo_small_en")' in python[0]
    assert "tf.data.Dataset" in python[1] and "model.fit(data" in python[1]
    assert "tf.strings.split" in python[2] and "pad_tokens" in python[2]
    assert 'from_preset("elmo_2x1024_en")' in python[3]
    assert len(blocks("bash")) == 3


@pytest.mark.large
def test_quick_start_embed(tmp_path):
    _run_python(blocks("python")[0], tmp_path)


@pytest.mark.large
def test_quick_start_keras_model(tmp_path):
    _run_python(blocks("python")[1], tmp_path)
    work = tmp_path / "work"
    assert (work / "classifier.keras").is_file()
    assert (work / "elmo_savedmodel" / "1" / "saved_model.pb").is_file()


@pytest.mark.large
def test_quick_start_text_forms(tmp_path):
    _run_python(blocks("python")[2], tmp_path)


@pytest.mark.large
def test_quick_start_published_model_from_a_local_mirror(tmp_path):
    import keras_elmo
    from keras_elmo.presets import published
    from tests.presets.preset_server import Server

    model = published.PUBLISHED_PRESETS["elmo_2x1024_en"]
    options = tmp_path / "options.json"
    weights = tmp_path / "weights.hdf5"
    with open(options, "w", encoding="utf-8") as f:
        json.dump(model.options, f)
    bilm = keras_elmo.BiLM(
        keras_elmo.BiLMConfig.from_options_json(model.options)
    )
    bilm.save_allennlp(str(options), str(weights))
    server = Server()
    try:
        server.files["/m/" + model.options_path] = options.read_bytes()
        server.files["/m/" + model.weights_path] = weights.read_bytes()
        _run_python(
            blocks("python")[3],
            tmp_path,
            KERAS_ELMO_PRESET_MIRROR=server.url + "m/",
        )
        assert server.count("/m/" + model.weights_path) == 1
    finally:
        server.close()


def _outside_make():
    """The environment without a parent make's settings (CI runs the
    suite from `make test`; a child `make -n` would inherit its flags)."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")
    }


def test_install_and_setup_lines():
    setup, install = blocks("bash")[1], blocks("bash")[0]
    # keras-elmo is not on the package index: the README installs the
    # clone, which setup.cfg builds.
    assert install.split("#")[0].split() == ["pip", "install", "."]
    assert os.path.isfile(os.path.join(REPO, "setup.cfg"))
    targets = [line.split()[1] for line in setup.splitlines() if line]
    assert targets == ["demo", "test"]
    for target in targets:
        done = subprocess.run(
            ["make", "--no-print-directory", "-n", target],
            cwd=REPO,
            capture_output=True,
            text=True,
            env=_outside_make(),
        )
        assert done.returncode == 0, done.stderr
    with open(os.path.join(REPO, ".ci", "run"), encoding="utf-8") as f:
        assert "\nmake test\n" in f.read()


def test_make_demo_installs_only_the_runtime_and_says_so():
    """In a fresh clone (no .venv), `make demo` would create the venv and
    install keras_elmo without the test extras, pip's output visible."""
    done = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "-n",
            "demo",
            "VENV=/nonexistent/venv",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=_outside_make(),
    )
    assert done.returncode == 0, done.stderr
    commands = done.stdout
    installs = [c for c in commands.splitlines() if " install " in c]
    assert installs[-1].endswith("install -e .")
    assert "[test]" not in commands and "--quiet" not in commands
    assert commands.count("echo ") >= 3  # it says what it is doing
    assert commands.rstrip().endswith("keras-elmo demo")


@pytest.mark.large
def test_command_line_block(tmp_path):
    work = tmp_path / "work"
    (work / "corpus").mkdir(parents=True)
    lines = [
        "the cat sat on the mat .",
        "a dog ran in the park .",
        "the bank of the river is green .",
    ] * 8
    with gzip.open(work / "corpus" / "train-0.txt.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    (work / "sentences.txt").write_text("Hello world .\nThe bank .\n")
    for line in blocks("bash")[2].splitlines():
        command = line.split("#", 1)[0].strip()
        if not command:
            continue
        argv = shlex.split(command)
        assert argv[0] == "keras-elmo"
        done = keras_elmo(argv, work, _env(tmp_path))
        assert done.returncode == 0, (command, done.stderr[-3000:])
    assert (work / "vectors.hdf5").is_file()
    assert (work / "savedmodel" / "elmo" / "1" / "saved_model.pb").is_file()
    assert (work / "runs" / "small" / "weights.hdf5").is_file()


def test_numpy_string_arrays_fail_in_keras_adapter_as_the_readme_says():
    """The README tells users to pass tf.constant / tf.data; this is why
    (Keras 3.15's data adapter). When Keras accepts them, update it."""
    import keras
    import numpy as np

    import keras_elmo
    from tests.conftest import tiny_bilm

    tokens = keras.Input(shape=(None,), dtype="string")
    elmo = keras_elmo.layers.ElmoLayer(tiny_bilm())(tokens)
    pooled = keras.layers.GlobalMaxPooling1D()(elmo)
    model = keras.Model(tokens, keras.layers.Dense(1)(pooled))
    model.compile(optimizer="sgd", loss="mse")
    for dtype, name in ((object, "object"), (str, "str32")):
        texts = np.array([["a", "b"], ["c", ""]], dtype=dtype)
        with pytest.raises(ValueError, match=f"Invalid dtype: {name}"):
            model.fit(texts, np.ones((2, 1)), verbose=0)
    with open(README, encoding="utf-8") as f:
        assert "`Invalid dtype: object`" in f.read()
