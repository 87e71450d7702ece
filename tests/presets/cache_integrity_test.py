"""A tampered cache is refused on load, `keras-elmo presets --verify`
rehashes it, and unpack and refusal errors name the archive, never the
contents of a folder."""

import errno
import hashlib
import json
import os
import shutil
import zipfile

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.presets.sources import resolve_model
from tests.conftest import flip_last_byte
from tests.presets.archives_test import assert_same
from tests.presets.archives_test import nlpl_zip


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def url_model(reference_weights, tmp_path):
    """`(file:// URL of a model folder, options, weights)`."""
    options, weights = reference_weights("tiny")
    folder = tmp_path / "served"
    folder.mkdir()
    shutil.copy(options, folder / "options.json")
    shutil.copy(weights, folder / "weights.hdf5")
    return folder.as_uri() + "/", options, weights


def _refused(call, *args, **kwargs):
    """The `CacheIntegrityError` (an `OSError`) that `call` raises."""
    with pytest.raises(OSError) as e:
        call(*args, **kwargs)
    assert type(e.value).__name__ == "CacheIntegrityError", e.value
    return e.value


def _record(folder):
    with open(os.path.join(folder, ".verified.json")) as f:
        return json.load(f)


def test_an_edited_url_cache_file_is_refused_and_never_restamped(
    url_model, cache, capsys
):
    url, options, weights = url_model
    assert_same(keras_elmo.BiLM.from_preset(url), options, weights)
    (cached,) = cache.glob("url-*/weights.hdf5")
    folder = os.path.dirname(cached)
    before = _record(folder)
    # Same bytes, a new mtime: accepted, the record's mtime refreshed.
    os.utime(cached, ns=(1, 1))
    assert_same(keras_elmo.BiLM.from_preset(url), options, weights)
    assert _record(folder)["weights.hdf5"]["mtime_ns"] == 1
    assert (
        _record(folder)["weights.hdf5"]["sha256"]
        == (before["weights.hdf5"]["sha256"])
    )
    # One bit changed (same size, shapes still right): refused.
    flip_last_byte(cached)
    error = _refused(keras_elmo.BiLM.from_preset, url)
    message = str(error)
    assert repr(str(cached)) in message
    assert "changed after it was recorded" in message
    assert f"recorded {before['weights.hdf5']['sha256']}" in message
    assert "force=True" in message and "`keras-elmo download`" in message
    assert error.filename == str(cached)
    assert (
        _record(folder)["weights.hdf5"]["sha256"]
        == (before["weights.hdf5"]["sha256"])
    )
    # Refused again (the record was not rewritten), until fetched again.
    _refused(keras_elmo.BiLM.from_preset, url)
    assert main(["download", url, "--force"]) == 0
    capsys.readouterr()
    assert_same(keras_elmo.BiLM.from_preset(url), options, weights)


def test_an_edited_file_of_an_unpacked_zip_is_refused_until_force(
    reference_weights, tmp_path, cache
):
    options, weights = reference_weights("tiny")
    archive = nlpl_zip(tmp_path / "a.zip", options, weights)
    assert_same(keras_elmo.BiLM.from_preset(archive), options, weights)
    (model,) = cache.glob("zip-*/model.hdf5")
    assert sorted(_record(model.parent)) == [
        "meta.json",
        "model.hdf5",
        "options.json",
        "vocab.txt",
    ]
    flip_last_byte(model)
    message = str(_refused(keras_elmo.BiLM.from_preset, archive))
    assert repr(str(model)) in message
    assert f"archive {archive!r}" in message
    assert f"Delete the folder {str(model.parent)!r}" in message
    # An added file is refused too (it could change what is loaded).
    resolve_model(archive, force=True)
    (model.parent / "softmax.hdf5").write_bytes(b"x")
    assert "was added" in str(_refused(resolve_model, archive))
    # force=True unpacks again from the archive.
    resolved = resolve_model(archive, force=True)
    assert resolved.weights == str(model)
    assert not (model.parent / "softmax.hdf5").exists()
    assert_same(keras_elmo.BiLM.from_preset(archive), options, weights)


def test_presets_verify_rehashes_every_entry(
    url_model, reference_weights, tmp_path, cache, capsys
):
    url, options, weights = url_model
    archive = nlpl_zip(tmp_path / "a.zip", options, weights)
    resolve_model(url)
    resolve_model(archive)
    assert main(["presets", "--verify"]) == 0
    out = capsys.readouterr().out
    (url_entry,) = [p.parent.name for p in cache.glob("url-*/weights.hdf5")]
    (zip_entry,) = [p.parent.name for p in cache.glob("zip-*/model.hdf5")]
    assert f"Cache {cache}: 2 entries" in out
    assert f"ok          {url_entry}  (2 files)" in out
    assert f"ok          {zip_entry}  (4 files)" in out
    # A change that keeps size and mtime is caught only by rehashing.
    vocab = cache / zip_entry / "vocab.txt"
    facts = os.stat(vocab)
    vocab.write_bytes(vocab.read_bytes().upper())
    os.utime(vocab, ns=(facts.st_atime_ns, facts.st_mtime_ns))
    resolve_model(archive)  # size and mtime match: not rehashed on load
    assert main(["presets", "--verify"]) == 1
    out = capsys.readouterr().out
    assert f"ok          {url_entry}  (2 files)" in out
    assert (
        f"changed     {zip_entry}  (4 files): vocab.txt: sha256 differs "
        "from the record" in out
    )


def test_a_corrupt_zip_member_names_the_archive_and_member(
    reference_weights, tmp_path, cache
):
    options, weights = reference_weights("tiny")
    path = tmp_path / "corrupt.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(options, "options.json")
        z.write(weights, "model.hdf5")
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("model.hdf5")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start : start + info.compress_size // 2] = b"\xff" * (
        info.compress_size // 2
    )
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError) as e:
        resolve_model(str(path))
    assert type(e.value).__name__ == "CorruptArchiveError"
    message = str(e.value)
    assert f"archive {str(path)!r}: member 'model.hdf5' cannot be" in message
    assert "damaged or truncated" in message
    assert [p.name for p in cache.iterdir()] == []


def test_a_full_disk_while_unpacking_names_archive_member_and_folder(
    reference_weights, tmp_path, cache, monkeypatch
):
    options, weights = reference_weights("tiny")
    archive = nlpl_zip(tmp_path / "a.zip", options, weights)
    copy = shutil.copyfileobj

    def full_disk(source, target, *args):
        if getattr(target, "name", "").endswith("model.hdf5"):
            target.write(source.read(100))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return copy(source, target, *args)

    monkeypatch.setattr(shutil, "copyfileobj", full_disk)
    with pytest.raises(OSError) as e:
        resolve_model(archive)
    message = str(e.value)
    assert e.value.errno == errno.ENOSPC
    assert f"member 'model.hdf5' of archive {archive!r}" in message
    assert "the disk is full" in message
    (folder,) = [str(cache / f"zip-{n}") for n in [_digest(archive)]]
    assert repr(folder) in message
    assert [p.name for p in cache.iterdir()] == []


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:20]


def test_a_folder_of_no_known_format_is_refused_without_its_file_names(
    tmp_path,
):
    folder = tmp_path / "etc"
    folder.mkdir()
    (folder / "shadow-secret-name").write_text("x")
    (folder / "sub-folder-name").mkdir()
    with pytest.raises(ValueError) as e:
        resolve_model(str(folder))
    message = str(e.value)
    assert "shadow-secret-name" not in message
    assert "sub-folder-name" not in message
    assert message.startswith(
        f"Model folder {str(folder)!r} matches no known format: it is a "
        "folder holding no known model. Expected one of: options.json + "
        "weights.hdf5"
    )
    assert "ELMoForManyLangs" in message
