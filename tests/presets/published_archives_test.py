"""NLPL and EMBEDDIA archives by name: served by a local HTTP server laid
out like each repository, downloaded, digest-checked (pinned and
unpinned), unpacked atomically, and equal to the unzipped AllenNLP load."""

import dataclasses
import hashlib
import io
import json
import logging
import os
import shutil
import tarfile
import zipfile

import numpy as np
import pytest

import keras_elmo
from keras_elmo.presets import archives
from keras_elmo.presets import archives as archive_digest
from keras_elmo.presets import download
from keras_elmo.presets import published as pa
from keras_elmo.presets.sources import resolve_model
from keras_elmo.presets.table import terminal_table
from tests.presets.archives_test import assert_same
from tests.presets.archives_test import nlpl_zip

NORELMO = "nlpl_no_norelmo100_218"
NORELMO_PATH = "/repository/20/218.zip"
EMBEDDIA_PATH = "/11356/1277/slovenian-elmo.tar.gz"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def mirror(server, monkeypatch):
    monkeypatch.setenv("KERAS_ELMO_PRESET_MIRROR", server.url)
    return server


def embeddia_tar(path, options, weights, folder="slovenian"):
    """EMBEDDIA's layout: one folder, options.json + <lang>-elmo-weights."""
    with tarfile.open(path, "w:gz") as t:
        t.add(options, f"{folder}/options.json")
        t.add(weights, f"{folder}/{folder}-elmo-weights.hdf5")
    return str(path)


def served(server, url_path, archive_path):
    with open(archive_path, "rb") as f:
        server.files[url_path] = f.read()
    return hashlib.sha256(server.files[url_path]).hexdigest()


def user_files(cache):
    return sorted(e for e in os.listdir(cache) if not e.startswith("."))


def test_registry_names_say_language_and_source(monkeypatch):
    monkeypatch.delenv("KERAS_ELMO_PRESET_MIRROR", raising=False)
    nlpl = {n: a for n, a in pa.PUBLISHED_ARCHIVES.items() if "nlpl_" in n}
    ids = sorted(int(a.path.split("/")[-1][:-4]) for a in nlpl.values())
    assert ids == [195, 196, 199, 210, 211, 212, 217, 218]
    for name, archive in nlpl.items():
        nlpl_id = archive.path.split("/")[-1][:-4]
        assert name.startswith(("nlpl_no_", "nlpl_ru_")), name
        assert name.endswith("_" + nlpl_id)
        assert archive.urls() == (f"http://vectors.nlpl.eu/{archive.path}",)
        assert archive.path.startswith("repository/20/")
        assert archive.sha256 is None and archive.format == "allennlp"
        assert pa.EVIDENCE[name]
    sl = pa.find_archive("embeddia_sl")
    assert sl.urls() == (
        "https://www.clarin.si/repository/xmlui/bitstream/handle/"
        "11356/1277/slovenian-elmo.tar.gz",
    )
    assert sl.suffix == ".tar.gz" and pa.find_archive(NORELMO).suffix == ".zip"


def test_nlpl_name_unpinned_records_on_first_download_then_checks(
    reference_weights, tmp_path, cache, mirror, caplog
):
    options, weights = reference_weights("tiny")
    digest = served(
        mirror, NORELMO_PATH, nlpl_zip(tmp_path / "a.zip", options, weights)
    )
    with caplog.at_level(logging.WARNING, archive_digest.__name__):
        bilm = keras_elmo.BiLM.from_preset(NORELMO)
    assert_same(bilm, options, weights)
    record = cache / f"{NORELMO}.zip.sha256"
    assert json.loads(record.read_text()) == {
        "sha256": digest,
        "source": mirror.url + NORELMO_PATH[1:],
    }
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "unpinned" in warned[0]
    assert digest in warned[0] and str(record) in warned[0]
    # Later uses: no request, no warning, checked against the record.
    caplog.clear()
    with caplog.at_level(logging.WARNING, archive_digest.__name__):
        assert_same(keras_elmo.BiLM.from_preset(NORELMO), options, weights)
    assert caplog.records == []
    assert mirror.requests[NORELMO_PATH] == 1
    assert user_files(cache) == sorted(
        [f"{NORELMO}.zip", f"{NORELMO}.zip.sha256", _unpacked(cache)]
    )


def _unpacked(cache):
    (folder,) = [e for e in os.listdir(cache) if e.startswith(("zip-", "tar"))]
    return folder


def test_nlpl_name_embedder_equals_the_unzipped_folder(
    reference_weights, tmp_path, cache, mirror
):
    options, weights = reference_weights("tiny")
    served(mirror, NORELMO_PATH, nlpl_zip(tmp_path / "a.zip", options, weights))
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(tmp_path / "a.zip") as z:
        z.extractall(folder)
    sentences = [["Det", "regner", "i", "Bergen", "."], ["Hei"]]
    got = keras_elmo.Embedder.from_preset(NORELMO).embed(sentences)
    want = keras_elmo.Embedder.from_preset(str(folder)).embed(sentences)
    for g, w in zip(got, want):
        assert g.shape == w.shape == (3, len(g[0]), w.shape[-1])
        np.testing.assert_array_equal(g, w)


def test_a_changed_archive_is_refused_against_the_record(
    reference_weights, tmp_path, cache, mirror
):
    options, weights = reference_weights("tiny")
    first = served(
        mirror, NORELMO_PATH, nlpl_zip(tmp_path / "a.zip", options, weights)
    )
    resolve_model(NORELMO)
    # The server now answers a different archive under the same ID.
    other = nlpl_zip(tmp_path / "b.zip", options, weights, prefix="x/")
    second = served(mirror, NORELMO_PATH, other)
    assert second != first
    with pytest.raises(archive_digest.ArchiveDigestError) as e:
        resolve_model(NORELMO, force=True)
    message = str(e.value)
    assert f"has sha256 {second}" in message
    assert f"but {first} was recorded" in message
    # Refused until the record is deleted; then the new one is accepted.
    with pytest.raises(archive_digest.ArchiveDigestError):
        resolve_model(NORELMO)
    os.remove(archive_digest.record_path(cache / f"{NORELMO}.zip"))
    assert resolve_model(NORELMO).path.endswith(os.sep + "x")
    assert archive_digest.read_record(cache / f"{NORELMO}.zip") == second


@pytest.mark.parametrize("correct", [True, False])
def test_pinned_archive_is_checked_and_writes_no_record(
    reference_weights, tmp_path, cache, mirror, monkeypatch, correct
):
    options, weights = reference_weights("tiny")
    digest = served(
        mirror, NORELMO_PATH, nlpl_zip(tmp_path / "a.zip", options, weights)
    )
    pin = digest if correct else "0" * 64
    pinned = dataclasses.replace(pa.find_archive(NORELMO), sha256=pin)
    monkeypatch.setitem(pa.PUBLISHED_ARCHIVES, NORELMO, pinned)
    if not correct:
        with pytest.raises(download.PresetDownloadError, match="URLs tried"):
            resolve_model(NORELMO)
        assert not (cache / f"{NORELMO}.zip").exists()
        return
    assert_same(keras_elmo.BiLM.from_preset(NORELMO), options, weights)
    assert not (cache / f"{NORELMO}.zip.sha256").exists()
    # A cached copy altered afterwards fails the pin on its next use.
    with open(cache / f"{NORELMO}.zip", "ab") as f:
        f.write(b"\0")
    with pytest.raises(archive_digest.ArchiveDigestError, match="pinned"):
        resolve_model(NORELMO)


def test_a_cut_download_leaves_nothing_then_a_rerun_works(
    reference_weights, tmp_path, cache, mirror
):
    options, weights = reference_weights("tiny")
    served(mirror, NORELMO_PATH, nlpl_zip(tmp_path / "a.zip", options, weights))
    mirror.cut[NORELMO_PATH] = 100
    with pytest.raises(download.PresetDownloadError):
        resolve_model(NORELMO)
    assert user_files(cache) == []
    del mirror.cut[NORELMO_PATH]
    assert_same(keras_elmo.BiLM.from_preset(NORELMO), options, weights)


def test_embeddia_name_tar_gz_equals_the_unpacked_files(
    reference_weights, tmp_path, cache, mirror
):
    options, weights = reference_weights("tiny")
    digest = served(
        mirror,
        EMBEDDIA_PATH,
        embeddia_tar(tmp_path / "sl.tar.gz", options, weights),
    )
    resolved = resolve_model("embeddia_sl")
    assert resolved.format == "allennlp"
    assert resolved.path.endswith(os.sep + "slovenian")
    assert os.path.basename(resolved.weights) == "slovenian-elmo-weights.hdf5"
    assert_same(keras_elmo.BiLM.from_preset("embeddia_sl"), options, weights)
    assert (cache / "embeddia_sl.tar.gz").is_file()
    assert archive_digest.read_record(cache / "embeddia_sl.tar.gz") == digest
    assert mirror.requests[EMBEDDIA_PATH] == 1
    row = [r for r in terminal_table(200).splitlines() if "embeddia_sl" in r]
    assert row[0].split()[:3] == ["embeddia_sl", "allennlp", "?"]
    assert row[0].split()[3] == "yes"


def test_embeddia_tar_gz_by_path_and_by_url(
    reference_weights, tmp_path, cache, server
):
    options, weights = reference_weights("tiny")
    path = embeddia_tar(tmp_path / "sl.tar.gz", options, weights)
    assert_same(keras_elmo.BiLM.from_preset(path), options, weights)
    served(server, "/x/slovenian-elmo.tar.gz", path)
    url = server.url + "x/slovenian-elmo.tar.gz"
    assert_same(keras_elmo.BiLM.from_preset(url), options, weights)
    keras_elmo.BiLM.from_preset(url)
    assert server.requests["/x/slovenian-elmo.tar.gz"] == 1


def test_a_killed_tar_unpack_leaves_nothing_a_rerun_trusts(
    reference_weights, tmp_path, cache, monkeypatch
):
    options, weights = reference_weights("tiny")
    path = embeddia_tar(tmp_path / "sl.tar.gz", options, weights)
    real, calls = shutil.copyfileobj, []

    def dies_on_second(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt  # a kill between two members
        return real(*args)

    monkeypatch.setattr(shutil, "copyfileobj", dies_on_second)
    with pytest.raises(KeyboardInterrupt):
        resolve_model(path)
    assert user_files(cache) == []
    monkeypatch.setattr(shutil, "copyfileobj", real)
    assert_same(keras_elmo.BiLM.from_preset(path), options, weights)


def _tar_with(path, info, data=b""):
    with tarfile.open(path, "w:gz") as t:
        t.addfile(info, io.BytesIO(data) if data else None)
    return str(path)


def _member(name, kind=tarfile.REGTYPE, size=0, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, size, linkname
    return info


@pytest.mark.parametrize(
    "info, message",
    [
        (_member("../evil.txt", size=1), "outside"),
        (_member("/etc/evil", size=1), "outside"),
        (_member("a/../../evil", size=1), "outside"),
        (_member("link", tarfile.SYMTYPE, linkname="/etc"), "symbolic link"),
        (_member("hard", tarfile.LNKTYPE, linkname="/etc/passwd"), "hard"),
        (_member("dev", tarfile.CHRTYPE), "character device"),
        (_member("fifo", tarfile.FIFOTYPE), "FIFO"),
    ],
)
def test_unsafe_tar_members_are_refused_before_writing(
    tmp_path, cache, info, message
):
    path = _tar_with(tmp_path / "bad.tar.gz", info, b"x" * info.size)
    with pytest.raises(archives.UnsafeArchiveError, match=message):
        resolve_model(path)
    assert not (tmp_path / "evil.txt").exists()
    assert (os.listdir(cache) if cache.exists() else []) == []


def test_a_tar_bomb_is_refused(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 100)
    info = _member("model.hdf5", size=1000)
    path = _tar_with(tmp_path / "big.tar.gz", info, b"0" * 1000)
    with pytest.raises(archives.UnsafeArchiveError, match="unpacks to 1000"):
        resolve_model(path)


def test_options_with_several_other_hdf5_files_is_ambiguous(
    reference_weights, tmp_path
):
    options, weights = reference_weights("tiny")
    shutil.copy(options, tmp_path / "options.json")
    shutil.copy(weights, tmp_path / "a-elmo-weights.hdf5")
    shutil.copy(weights, tmp_path / "softmax.hdf5")
    resolved = resolve_model(str(tmp_path))
    assert os.path.basename(resolved.weights) == "a-elmo-weights.hdf5"
    assert os.path.basename(resolved.softmax) == "softmax.hdf5"
    shutil.copy(weights, tmp_path / "b-elmo-weights.hdf5")
    with pytest.raises(FileNotFoundError, match="exactly one other .hdf5"):
        resolve_model(str(tmp_path))


def test_an_archive_url_fetched_again_with_force_records_the_new_digest(
    reference_weights, tmp_path, cache, server, caplog
):
    """docs/PRESETS.md, "Caches of URLs": unlike a name, a URL's archive
    may change; `force=True` accepts the new one and says so."""
    options, weights = reference_weights("tiny")
    first = served(
        server, "/m.zip", nlpl_zip(tmp_path / "a.zip", options, weights)
    )
    url = server.url + "m.zip"
    resolve_model(url)
    (cached,) = cache.glob("archive-*.zip")
    assert archive_digest.read_record(cached) == first
    second = served(
        server,
        "/m.zip",
        nlpl_zip(tmp_path / "b.zip", options, weights, prefix="y/"),
    )
    assert not resolve_model(url).path.endswith(os.sep + "y")  # cached
    with caplog.at_level(logging.WARNING, archive_digest.__name__):
        assert resolve_model(url, force=True).path.endswith(os.sep + "y")
    assert f"{second} (it was {first})" in caplog.records[-1].getMessage()
    assert archive_digest.read_record(cached) == second


def test_efml_name_through_a_mirror_equals_sents2elmo(tmp_path, cache, mirror):
    """`efml_zh` served as NLPL's repository 11 would: the package-written
    fixture folder zipped under one top-level folder; the Embedder on the
    name equals the package's `sents2elmo` (all layers and average)."""
    from tests import efml_reference as ref

    folder = ref.folder("word", "legacy")
    path = tmp_path / "179.zip"
    with zipfile.ZipFile(path, "w") as z:
        for name in sorted(os.listdir(folder)):
            z.write(os.path.join(folder, name), "zh.model/" + name)
    served(mirror, "/repository/11/179.zip", path)
    emb = keras_elmo.Embedder.from_preset("efml_zh")
    sentences, layers, average = ref.reference("word")
    for a, e in zip(emb.embed(sentences, layers="all"), layers):
        ref.assert_relative(a, e)
    for a, e in zip(emb.embed(sentences, layers="average"), average):
        ref.assert_relative(a, e)
    assert archive_digest.read_record(cache / "efml_zh.zip") is not None
