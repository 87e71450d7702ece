"""Published presets: download once, cache, verify, fail clearly (offline)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import keras_elmo
from keras_elmo.presets import published
from keras_elmo.presets.download import PresetDownloadError
from keras_elmo.presets.sources import resolve_preset

NAME = "test_tiny_elmo"
OPTIONS_PATH = "tiny/elmo_tiny_options.json"
WEIGHTS_PATH = "tiny/elmo_tiny_weights.hdf5"


@pytest.fixture
def tiny(reference_weights):
    options, weights = reference_weights("tiny")
    with open(options, "rb") as f:
        options_bytes = f.read()
    with open(weights, "rb") as f:
        weights_bytes = f.read()
    return options, weights, options_bytes, weights_bytes


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KERAS_ELMO_PRESET_MIRROR", raising=False)
    return tmp_path / "cache"


def _register(tiny, hosts, **fields):
    fields.setdefault("options", json.loads(tiny[2]))
    model = published.PublishedModel(
        name=NAME,
        options_path=OPTIONS_PATH,
        weights_path=WEIGHTS_PATH,
        description="tiny test model",
        training_data="seeded random",
        licence="test",
        hosts=tuple(hosts),
        **fields,
    )
    published.register_preset(model)
    return model


@pytest.fixture
def registered(tiny, server, cache):
    server.files["/" + OPTIONS_PATH] = tiny[2]
    server.files["/" + WEIGHTS_PATH] = tiny[3]
    model = _register(tiny, [server.url])
    yield model
    published.unregister_preset(NAME)


def _same_outputs(bilm, options, weights):
    reference = keras_elmo.BiLM.from_allennlp(options, weights)
    ids = keras_elmo.batch_to_ids([["Hello", "world", "!"], ["Hi"]])
    np.testing.assert_array_equal(
        bilm(ids)["lstm_outputs2"], reference(ids)["lstm_outputs2"]
    )


def _cache_files(cache):
    folder = cache / NAME
    if not folder.exists():
        return set()
    return {p.name for p in folder.iterdir()}


def test_first_call_downloads_with_progress_then_cache_makes_no_request(
    registered,
    server,
    tiny,
    cache,
    capsys,
):
    bilm = keras_elmo.BiLM.from_preset(NAME)
    out = capsys.readouterr().out
    assert f"Downloading data from {server.url}{WEIGHTS_PATH}" in out
    assert f"{len(tiny[3])}/{len(tiny[3])}" in out  # the Keras Progbar
    assert server.count("/" + WEIGHTS_PATH) == 1
    assert server.count("/" + OPTIONS_PATH) == 1
    _same_outputs(bilm, tiny[0], tiny[1])
    assert (cache / NAME / "weights.hdf5").read_bytes() == tiny[3]
    again = keras_elmo.layers.ElmoLayer.from_preset(NAME, dropout=0.0)
    assert server.count("/" + WEIGHTS_PATH) == 1
    assert server.count("/" + OPTIONS_PATH) == 1
    _same_outputs(again.bilm, tiny[0], tiny[1])
    assert not [n for n in _cache_files(cache) if n.startswith(".partial")]


def test_second_host_is_tried_when_first_answers_404(
    tiny,
    server,
    cache,
):
    server.files["/mirror/" + OPTIONS_PATH] = tiny[2]
    server.files["/mirror/" + WEIGHTS_PATH] = tiny[3]
    _register(tiny, [server.url + "gone/", server.url + "mirror/"])
    try:
        options, weights, _ = resolve_preset(NAME)
    finally:
        published.unregister_preset(NAME)
    assert server.count("/gone/" + OPTIONS_PATH) == 1
    with open(weights, "rb") as f:
        assert f.read() == tiny[3]


def test_mirror_env_var_replaces_the_hosts(
    tiny,
    server,
    cache,
    monkeypatch,
):
    server.files["/m/" + OPTIONS_PATH] = tiny[2]
    server.files["/m/" + WEIGHTS_PATH] = tiny[3]
    model = _register(tiny, ["http://127.0.0.1:9/never/"])
    monkeypatch.setenv("KERAS_ELMO_PRESET_MIRROR", server.url + "m/")
    try:
        assert model.urls("weights") == (server.url + "m/" + WEIGHTS_PATH,)
        resolve_preset(NAME)
    finally:
        published.unregister_preset(NAME)
    assert server.count("/m/" + WEIGHTS_PATH) == 1


def _closed_port_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def test_offline_error_names_preset_urls_and_cache_path_then_by_hand_works(
    tiny, cache
):
    host = _closed_port_url()
    _register(tiny, [host])
    try:
        with pytest.raises(PresetDownloadError) as info:
            keras_elmo.BiLM.from_preset(NAME)
        message = str(info.value)
        assert f"preset {NAME!r}" in message
        assert host + OPTIONS_PATH in message
        target = cache / NAME
        assert str(target / "options.json") in message
        assert str(target / "weights.hdf5") in message
        assert _cache_files(cache) <= {".lock"}
        shutil.copy(tiny[0], target / "options.json")
        shutil.copy(tiny[1], target / "weights.hdf5")
        bilm = keras_elmo.BiLM.from_preset(NAME)
    finally:
        published.unregister_preset(NAME)
    _same_outputs(bilm, tiny[0], tiny[1])
    assert ".verified.json" in _cache_files(cache)


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("404", "404 -- Not Found"),
        ("truncated", "not an HDF5 file|cannot be"),
        ("dropped", "retrieval incomplete|not an HDF5 file|cannot be"),
        ("corrupt", "not an HDF5 file"),
        ("bad_json", "is not valid JSON"),
        ("sha256", "hash|corrupted"),
    ],
)
def test_bad_download_gives_clear_error_and_leaves_nothing(
    registered,
    server,
    tiny,
    cache,
    damage,
    expected,
):
    weights = tiny[3]
    if damage == "404":
        del server.files["/" + WEIGHTS_PATH]
    elif damage == "truncated":
        server.files["/" + WEIGHTS_PATH] = weights[: len(weights) // 2]
    elif damage == "dropped":
        server.cut["/" + WEIGHTS_PATH] = len(weights) // 2
    elif damage == "corrupt":
        server.files["/" + WEIGHTS_PATH] = b"\0" * 64 + weights[64:]
    elif damage == "bad_json":
        server.files["/" + OPTIONS_PATH] = tiny[2][:40]
    elif damage == "sha256":
        _register(tiny, [server.url], weights_sha256="0" * 64)
    with pytest.raises(PresetDownloadError, match=expected) as info:
        resolve_preset(NAME)
    name = "options.json" if damage == "bad_json" else "weights.hdf5"
    assert f"Could not fetch {name} of preset {NAME!r}" in str(info.value)
    assert _cache_files(cache) == {".lock"}


def test_shape_mismatch_names_the_dataset(
    registered,
    server,
    tiny,
    cache,
):
    options = json.loads(tiny[2])
    options["lstm"]["projection_dim"] = 8
    server.files["/" + OPTIONS_PATH] = json.dumps(options).encode()
    _register(tiny, [server.url], options=None)  # nothing to compare with
    with pytest.raises(
        PresetDownloadError,
        match=r"dataset 'CNN_proj/W_proj': expected shape \(28, 8\)",
    ):
        resolve_preset(NAME)
    assert _cache_files(cache) == {".lock"}


def test_options_that_differ_from_the_registry_are_refused(
    registered,
    server,
    tiny,
    cache,
):
    options = json.loads(tiny[2])
    options["lstm"]["dim"] = 64
    server.files["/" + OPTIONS_PATH] = json.dumps(options).encode()
    with pytest.raises(PresetDownloadError) as raised:
        resolve_preset(NAME)
    message = str(raised.value)
    # Only the differing field, not two whole configs.
    assert (
        "differs from the architecture recorded in the registry: "
        "lstm_units is 64, expected 32." in message
    ), message
    assert "projection_dim" not in message and "BiLMConfig(" not in message
    assert _cache_files(cache) == {".lock"}


_FETCH = """
import json, sys
from keras_elmo.presets import published
from keras_elmo.presets.sources import resolve_preset
options = json.loads(open(sys.argv[2], "rb").read())
published.register_preset(published.PublishedModel(
    name=%r, options_path=%r, weights_path=%r, description="", options=options,
    training_data="", licence="", hosts=(sys.argv[1],)))
print(resolve_preset(%r)[1])
""" % (NAME, OPTIONS_PATH, WEIGHTS_PATH, NAME)


def _spawn(server, tiny, cache):
    env = dict(os.environ, KERAS_ELMO_CACHE=str(cache))
    env.pop("KERAS_ELMO_PRESET_MIRROR", None)
    return subprocess.Popen(
        [sys.executable, "-c", _FETCH, server.url, tiny[0]],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.large
def test_two_processes_fetching_at_once_end_with_one_good_copy(
    registered,
    server,
    tiny,
    cache,
):
    server.slow["/" + WEIGHTS_PATH] = 0.002
    procs = [_spawn(server, tiny, cache) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
        assert out.splitlines()[-1] == str(cache / NAME / "weights.hdf5")
    assert server.count("/" + WEIGHTS_PATH) == 1  # the second waited
    assert (cache / NAME / "weights.hdf5").read_bytes() == tiny[3]
    assert _cache_files(cache) == {
        ".lock",
        ".verified.json",
        "options.json",
        "weights.hdf5",
    }


@pytest.mark.large
def test_killed_download_leaves_nothing_that_is_read_later(
    registered,
    server,
    tiny,
    cache,
):
    server.slow["/" + WEIGHTS_PATH] = 0.05  # ~1 KiB per 50 ms
    proc = _spawn(server, tiny, cache)
    deadline = time.time() + 120
    partial = None
    while time.time() < deadline and partial is None:
        for found in (cache / NAME).glob(".partial-*/weights.hdf5"):
            if found.stat().st_size > 2048:
                partial = found
        time.sleep(0.05)
    assert partial is not None, proc.stderr.read() if proc.poll() else ""
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert "weights.hdf5" not in _cache_files(cache)
    assert "options.json" not in _cache_files(cache)
    del server.slow["/" + WEIGHTS_PATH]
    options, weights, _ = resolve_preset(NAME)
    with open(weights, "rb") as f:
        assert f.read() == tiny[3]
    assert not [n for n in _cache_files(cache) if n.startswith(".partial")]
