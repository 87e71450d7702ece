"""NLPL / EMBEDDIA `.zip` archives: by path and URL, unpacked safely."""

import os
import shutil
import stat
import zipfile

import numpy as np
import pytest

import keras_elmo
from keras_elmo.presets import archives
from keras_elmo.presets.sources import resolve_model


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def nlpl_zip(path, options, weights, prefix=""):
    """An archive laid out as NLPL's: options.json, model.hdf5, vocab.txt."""
    with zipfile.ZipFile(path, "w") as z:
        z.write(options, prefix + "options.json")
        z.write(weights, prefix + "model.hdf5")
        z.writestr(prefix + "vocab.txt", "<S>\n</S>\n<UNK>\nthe\n")
        z.writestr(prefix + "meta.json", '{"id": 0}')
    return str(path)


def assert_same(bilm, options, weights):
    reference = keras_elmo.BiLM.from_allennlp(options, weights)
    ids = keras_elmo.batch_to_ids([["Norsk", "tekst", "."], ["Hei"]])
    got, want = bilm(ids), reference(ids)
    for key in ("word_emb", "lstm_outputs1", "lstm_outputs2"):
        np.testing.assert_array_equal(got[key], want[key])


@pytest.mark.parametrize("prefix", ["", "norelmo/"])
def test_zip_by_path_equals_the_unzipped_files(
    reference_weights, tmp_path, cache, prefix
):
    options, weights = reference_weights("tiny")
    path = nlpl_zip(tmp_path / "200.zip", options, weights, prefix)
    resolved = resolve_model(path)
    assert resolved.format == "allennlp"
    assert os.path.basename(resolved.weights) == "model.hdf5"
    assert resolved.vocabulary.endswith("vocab.txt")
    assert resolved.path.startswith(str(cache))
    assert_same(keras_elmo.BiLM.from_preset(path), options, weights)
    # Unpacked once: the second load finds the folder.
    assert resolve_model(path).path == resolved.path


def test_zip_by_url(reference_weights, tmp_path, cache, server):
    options, weights = reference_weights("tiny")
    path = nlpl_zip(tmp_path / "a.zip", options, weights)
    with open(path, "rb") as f:
        server.files["/repository/210.zip"] = f.read()
    url = server.url + "repository/210.zip"
    assert_same(keras_elmo.BiLM.from_preset(url), options, weights)
    keras_elmo.BiLM.from_preset(url)
    assert server.requests["/repository/210.zip"] == 1  # cached
    emb = keras_elmo.Embedder.from_preset(url)
    assert emb.description == f"archive {url}"


def _zip_with(path, name, data=b"x", mode=None):
    with zipfile.ZipFile(path, "w") as z:
        info = zipfile.ZipInfo(name)
        if mode is not None:
            info.external_attr = mode << 16
        z.writestr(info, data)
    return str(path)


@pytest.mark.parametrize(
    "name, mode, message",
    [
        ("../evil.txt", None, "outside"),
        ("/etc/evil", None, "outside"),
        ("a/../../evil", None, "outside"),
        ("link", stat.S_IFLNK | 0o777, "not a plain file"),
    ],
)
def test_unsafe_members_are_refused_before_writing(
    tmp_path, cache, name, mode, message
):
    path = _zip_with(tmp_path / "bad.zip", name, mode=mode)
    with pytest.raises(archives.UnsafeArchiveError, match=message):
        resolve_model(path)
    assert not (tmp_path / "evil.txt").exists()
    leftovers = os.listdir(cache) if cache.exists() else []
    assert leftovers == []


def test_a_zip_bomb_is_refused(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 100)
    path = _zip_with(tmp_path / "big.zip", "model.hdf5", b"0" * 1000)
    with pytest.raises(archives.UnsafeArchiveError, match="unpacks to 1000"):
        resolve_model(path)


def test_a_killed_unpack_leaves_nothing_a_rerun_trusts(
    reference_weights, tmp_path, cache, monkeypatch
):
    options, weights = reference_weights("tiny")
    path = nlpl_zip(tmp_path / "m.zip", options, weights)
    real = zipfile.ZipFile.extract
    seen = []

    def dies_on_second(self, member, where):
        seen.append(member)
        if len(seen) == 2:
            raise KeyboardInterrupt  # a kill between two members
        return real(self, member, where)

    monkeypatch.setattr(zipfile.ZipFile, "extract", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        resolve_model(path)
    assert [e for e in os.listdir(cache) if not e.startswith(".")] == []
    monkeypatch.setattr(zipfile.ZipFile, "extract", real)
    assert_same(keras_elmo.BiLM.from_preset(path), options, weights)


def test_a_folder_of_no_known_format_never_lists_its_files(tmp_path):
    (tmp_path / "readme.txt").write_text("hi")
    (tmp_path / "model.bin").write_bytes(b"\0")
    with pytest.raises(ValueError, match="holding no known model") as e:
        resolve_model(str(tmp_path))
    assert "readme.txt" not in str(e.value)
    assert "model.bin" not in str(e.value)


def test_not_a_zip(tmp_path):
    path = tmp_path / "fake.zip"
    path.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="is neither a ZIP nor a tar"):
        resolve_model(str(path))


def test_nlpl_folder_loads_unzipped(reference_weights, tmp_path):
    options, weights = reference_weights("tiny")
    shutil.copy(options, tmp_path / "options.json")
    shutil.copy(weights, tmp_path / "model.hdf5")
    assert_same(keras_elmo.BiLM.from_preset(str(tmp_path)), options, weights)


def test_published_archive_by_name_through_a_mirror(
    reference_weights, tmp_path, cache, server, monkeypatch
):
    from keras_elmo.presets import published as pa

    options, weights = reference_weights("tiny")
    path = nlpl_zip(tmp_path / "a.zip", options, weights)
    with open(path, "rb") as f:
        server.files["/repository/20/999.zip"] = f.read()
    monkeypatch.setenv("KERAS_ELMO_PRESET_MIRROR", server.url)
    archive = pa.PublishedArchive(
        name="nlpl_test_no",
        path="repository/20/999.zip",
        language="Norwegian",
        format="allennlp",
        source="a test",
        training_data="none",
        licence="CC-BY 4.0",
    )
    monkeypatch.setitem(pa.PUBLISHED_ARCHIVES, archive.name, archive)
    bilm = keras_elmo.BiLM.from_preset("nlpl_test_no")
    assert_same(bilm, options, weights)
    assert (cache / "nlpl_test_no.zip").is_file()
    keras_elmo.BiLM.from_preset("nlpl_test_no")
    assert server.requests["/repository/20/999.zip"] == 1


def test_efml_names_point_at_the_nlpl_ids(monkeypatch):
    from keras_elmo.presets import published as pa

    monkeypatch.delenv("KERAS_ELMO_PRESET_MIRROR", raising=False)
    assert len(pa.PUBLISHED_ARCHIVES) >= 44
    assert pa.find_archive("efml_zh").urls() == (
        "http://vectors.nlpl.eu/repository/11/179.zip",
    )
    assert pa.find_archive("efml_en").path == "repository/11/144.zip"
    ids = sorted(
        int(a.path.split("/")[-1][:-4])
        for a in pa.PUBLISHED_ARCHIVES.values()
        if a.name.startswith("efml_")
    )
    assert ids == list(range(136, 180))


def test_an_elmoformanylangs_folder_is_detected(tmp_path):
    for name in ("config.json", "char.dic", "word.dic", "encoder.pkl"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "token_embedder.pkl").write_bytes(b"")
    assert resolve_model(str(tmp_path)).format == "elmoformanylangs"


def test_a_mistyped_archive_name_gets_a_suggestion():
    with pytest.raises(ValueError, match="Did you mean 'efml_zh'"):
        resolve_model("efml_zhh")
