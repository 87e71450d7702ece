"""`from_preset` sources: folders, file:// and http(s):// URLs, hf://."""

import shutil
import sys
import types

import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.presets.sources import resolve_model
from keras_elmo.presets.sources import resolve_preset


@pytest.fixture
def model_dir(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    folder = tmp_path / "my model"
    folder.mkdir()
    shutil.copy(options, folder / "options.json")
    shutil.copy(weights, folder / "weights.hdf5")
    return folder, options, weights


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _check_same(bilm, options, weights):
    reference = keras_elmo.BiLM.from_allennlp(options, weights)
    ids = keras_elmo.batch_to_ids([["A", "local", "model"]])
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        np.testing.assert_array_equal(bilm(ids)[key], reference(ids)[key])


def test_local_folder(model_dir):
    folder, options, weights = model_dir
    _check_same(keras_elmo.BiLM.from_preset(str(folder)), options, weights)


def test_local_folder_without_weights_names_the_file(model_dir):
    folder = model_dir[0]
    (folder / "weights.hdf5").unlink()
    with pytest.raises(FileNotFoundError, match="has no weights.hdf5"):
        keras_elmo.BiLM.from_preset(str(folder))


def test_file_url_of_a_folder_is_fetched_into_the_cache(model_dir, cache):
    folder, options, weights = model_dir
    url = folder.as_uri() + "/"
    bilm = keras_elmo.BiLM.from_preset(url)
    _check_same(bilm, options, weights)
    cached = list(cache.glob("url-*/weights.hdf5"))
    assert len(cached) == 1
    assert cached[0].read_bytes() == (folder / "weights.hdf5").read_bytes()


def test_http_urls_of_the_two_files(model_dir, server, cache):
    folder, options, weights = model_dir
    server.files["/a/o.json"] = (folder / "options.json").read_bytes()
    server.files["/b/w.hdf5"] = (folder / "weights.hdf5").read_bytes()
    pair = (server.url + "a/o.json", server.url + "b/w.hdf5")
    _check_same(keras_elmo.BiLM.from_preset(pair), options, weights)
    keras_elmo.BiLM.from_preset(pair)
    assert server.count("/b/w.hdf5") == 1


def test_cli_options_and_weights_accept_urls(
    model_dir,
    server,
    cache,
    capsys,
):
    folder = model_dir[0]
    server.files["/o.json"] = (folder / "options.json").read_bytes()
    server.files["/w.hdf5"] = (folder / "weights.hdf5").read_bytes()
    argv = ["demo", "--options", server.url + "o.json"]
    assert main(argv + ["--weights", server.url + "w.hdf5", "a b"]) == 0
    assert f"Model: model at {server.url}w.hdf5" in capsys.readouterr().out


def test_hf_without_huggingface_hub_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ImportError, match=r"keras-elmo\[hf\]"):
        keras_elmo.BiLM.from_preset("hf://someone/elmo")


def test_hf_downloads_both_files_through_huggingface_hub(
    model_dir, monkeypatch
):
    folder, options, weights = model_dir
    calls = []

    def hf_hub_download(repo_id, filename, subfolder=None):
        calls.append((repo_id, filename, subfolder))
        return str(folder / filename)

    fake = types.SimpleNamespace(hf_hub_download=hf_hub_download)
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    bilm = keras_elmo.BiLM.from_preset("hf://someone/elmo/pt")
    _check_same(bilm, options, weights)
    assert calls == [
        ("someone/elmo", "options.json", "pt"),
        ("someone/elmo", "weights.hdf5", "pt"),
    ]


@pytest.mark.parametrize("name", ["small", "original"])
def test_architecture_names_are_not_weights(name):
    with pytest.raises(ValueError, match="is an architecture, not a trained"):
        resolve_preset(name)


def test_allennlp_spelling_is_an_alias():
    from keras_elmo.presets.published import find_published

    model = find_published("elmo_2x4096_512_2048cnn_2xhighway_5.5B")
    assert model.name == "elmo_2x4096_5.5b_en"
    assert model.urls("weights") == (
        "https://allennlp.s3.amazonaws.com/models/elmo/"
        "2x4096_512_2048cnn_2xhighway_5.5B/"
        "elmo_2x4096_512_2048cnn_2xhighway_5.5B_weights.hdf5",
        "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/"
        "2x4096_512_2048cnn_2xhighway_5.5B/"
        "elmo_2x4096_512_2048cnn_2xhighway_5.5B_weights.hdf5",
    )


def test_cli_download_prints_folder_and_sha256(model_dir, cache, capsys):
    import hashlib

    folder = model_dir[0]
    assert main(["download", folder.as_uri()]) == 0
    out = capsys.readouterr().out
    digest = hashlib.sha256((folder / "weights.hdf5").read_bytes())
    assert f"sha256 {digest.hexdigest()}" in out
    assert str(cache) in out


def test_cli_download_offline_error_exit_code(cache, capsys, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_PRESET_MIRROR", "http://127.0.0.1:9/")
    assert main(["download", "elmo_2x1024_en"]) == 2
    err = capsys.readouterr().err
    assert "preset 'elmo_2x1024_en'" in err
    assert str(cache / "elmo_2x1024_en" / "weights.hdf5") in err


def test_cli_architecture_preset_names_the_published_weights(capsys):
    assert main(["demo", "--preset", "small", "a b"]) == 2
    err = capsys.readouterr().err
    assert "'small' is an architecture, not a trained model" in err
    assert "--random-weights small" in err
    assert "AllenNLP's trained 'small' is --preset elmo_2x1024_en" in err
    assert main(["demo", "--random-weights", "small", "a b"]) == 0
    out = capsys.readouterr().out
    assert "RANDOMLY INITIALISED 'small'" in out


def test_url_cache_is_immutable_until_download_force(model_dir, server, cache):
    """docs/PRESETS.md, "Caches of URLs": a cached URL copy is never
    revalidated; `keras-elmo download URL --force` fetches it again."""
    folder, options, weights = model_dir
    server.files["/m/options.json"] = (folder / "options.json").read_bytes()
    server.files["/m/weights.hdf5"] = (folder / "weights.hdf5").read_bytes()
    url = server.url + "m/"
    keras_elmo.BiLM.from_preset(url)
    cached = list(cache.glob("url-*/weights.hdf5"))
    assert len(cached) == 1
    # The server's file changes (same architecture, other weights).
    other = keras_elmo.BiLM.from_allennlp(options, weights)
    for w in other.weights:
        w.assign(np.asarray(w) * 0.5)
    other.save_allennlp(str(folder / "o2.json"), str(folder / "w2.hdf5"))
    server.files["/m/weights.hdf5"] = (folder / "w2.hdf5").read_bytes()
    keras_elmo.BiLM.from_preset(url)
    assert server.count("/m/weights.hdf5") == 1  # not asked again
    assert cached[0].read_bytes() != (folder / "w2.hdf5").read_bytes()
    assert main(["download", url, "--force"]) == 0
    assert server.count("/m/weights.hdf5") == 2
    assert cached[0].read_bytes() == (folder / "w2.hdf5").read_bytes()


def test_a_source_that_is_not_a_path_names_the_argument():
    from keras_elmo.models.language_model import LMSubstitutes

    with pytest.raises(TypeError) as info:
        resolve_model(42)
    assert str(info.value) == (
        "Received an invalid value for argument `source`, expected a preset "
        "name, a folder, a .zip, a URL or hf://owner/repo, got int."
    )
    with pytest.raises(TypeError, match="a shipped preset name or a folder"):
        LMSubstitutes.from_preset(3.5)
