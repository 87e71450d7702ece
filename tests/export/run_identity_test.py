"""`run_identity`: what a resumable output records of its model and input,
and `changes`, which names what differs."""

import hashlib
import json
import os
import shutil

import numpy as np

import keras_elmo
from keras_elmo.embedding import model_spec
from keras_elmo.embedding import run_identity
from keras_elmo.embedding.embedder import BiLMEmbedder
from keras_elmo.embedding.embedder import SavedModelEmbedder
from tests.conftest import flip_last_byte
from tests.conftest import tiny_bilm


def test_a_bilm_has_one_identity_however_it_is_loaded(tmp_path):
    bilm = tiny_bilm(3)
    options, weights = str(tmp_path / "o.json"), str(tmp_path / "w.hdf5")
    bilm.save_allennlp(options, weights)
    loaded = keras_elmo.BiLM.from_allennlp(options, weights)
    first = BiLMEmbedder(bilm).identity
    assert first == BiLMEmbedder(loaded).identity
    assert first["kind"] == "bilm" and first["vocabulary"] is None
    # One weight moved by one float32 ulp: another model.
    variable = loaded.weights[3]
    value = np.asarray(variable.numpy())
    flat = value.reshape(-1).copy()
    flat[0] = np.nextafter(flat[0], np.float32(np.inf))
    variable.assign(flat.reshape(value.shape))
    other = BiLMEmbedder(loaded).identity
    assert other["weights"] != first["weights"]
    assert other["options"] == first["options"]
    assert BiLMEmbedder(tiny_bilm(4)).identity["weights"] != first["weights"]
    # A token-cache vocabulary is part of it (list or file, same digest).
    vocab = ["<S>", "</S>", "<UNK>", "the"]
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(vocab), encoding="utf-8")
    digest = hashlib.sha256("\n".join(vocab).encode()).hexdigest()
    assert BiLMEmbedder(bilm, vocab).identity["vocabulary"] == digest
    assert BiLMEmbedder(bilm, str(path)).identity["vocabulary"] == digest


def test_a_saved_model_is_named_by_its_fingerprint(bilm_export, tmp_path):
    _, path = bilm_export
    identity = SavedModelEmbedder(path).identity
    assert identity["kind"] == "saved_model"
    assert identity["fingerprint"].startswith("fingerprint:")
    assert run_identity.saved_model_identity(path) == identity
    # Without fingerprint.pb (older exports): the graph and variables.
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    os.remove(os.path.join(copy, "fingerprint.pb"))
    fallback = run_identity.saved_model_identity(copy)
    assert fallback["fingerprint"].startswith("files:")
    assert fallback == run_identity.saved_model_identity(copy)


def _record(tmp_path, text, layers="all", model=None):
    path = tmp_path / "in.txt"
    path.write_text(text, encoding="utf-8")
    model = model or {"kind": "bilm", "weights": "a" * 64}
    settings = {"layers": layers, "dim": 32}
    return run_identity.run_record(
        model, run_identity.input_identity(str(path)), settings
    )


def test_changes_names_what_differs(tmp_path):
    old = _record(tmp_path, "a b\nc\n")
    assert old["input"]["sha256"] == hashlib.sha256(b"a b\nc\n").hexdigest()
    assert old["input"]["size"] == 6
    assert old["version"] == keras_elmo.__version__
    os.utime(tmp_path / "in.txt", ns=(1, 1))  # touched, not changed
    touched = run_identity.run_record(
        old["model"],
        run_identity.input_identity(str(tmp_path / "in.txt")),
        old["settings"],
    )
    assert touched["input"]["mtime_ns"] == 1
    assert run_identity.changes(old, touched) == []
    edited = _record(tmp_path, "a x\nc\n")  # same size, same token count
    (change,) = run_identity.changes(old, edited)
    assert change.startswith("the input file's content (size 6 -> 6 bytes")
    other = _record(tmp_path, "a b\nc\n", "top", {"kind": "saved_model"})
    assert run_identity.changes(old, other) == [
        f"the model (bilm, weights {'a' * 12} -> saved_model)",
        "layers ('all' -> 'top')",
    ]
    other = dict(old, version="0.0.1")
    assert run_identity.changes(other, old) == [
        f"the keras_elmo version (0.0.1 -> {keras_elmo.__version__})"
    ]


def _files_record(identities):
    return run_identity.run_record(
        {"kind": "files"}, {"files": identities}, {"layers": "all"}
    )


def test_changes_names_each_input_file_added_gone_or_changed():
    a = {"size": 6, "mtime_ns": 1, "sha256": "1" * 64}
    b = {"size": 4, "mtime_ns": 1, "sha256": "2" * 64}
    old = _files_record({"/in/a.txt": a, "/in/b.txt": b})
    touched = _files_record({"/in/a.txt": dict(a, mtime_ns=9), "/in/b.txt": b})
    assert run_identity.changes(old, touched) == []
    new = _files_record(
        {"/in/a.txt": dict(a, size=7, sha256="3" * 64), "/in/c.txt": b}
    )
    assert run_identity.changes(old, new) == [
        "the content of input file /in/a.txt (size 6 -> 7 bytes, sha256 "
        f"{'1' * 12} -> {'3' * 12})",
        "the input files (gone: /in/b.txt)",
        "the input files (new: /in/c.txt)",
    ]


def _sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_model_files_identity_digests_files_and_loads_nothing(
    reference_weights, tmp_path, monkeypatch
):
    def refuse(*args, **kwargs):
        raise AssertionError("model_files_identity loaded a model")

    monkeypatch.setattr(keras_elmo.BiLM, "from_allennlp", refuse)
    monkeypatch.setattr(keras_elmo.BiLM, "from_preset", refuse)
    options, weights = reference_weights("tiny")
    pair = model_spec.model_files_identity(
        {"options": options, "weights": weights}
    )
    assert pair == {
        "kind": "files",
        "format": "allennlp",
        "options": _sha256(options),
        "weights": _sha256(weights),
        "vocabulary": None,
    }
    # The same files as a folder, and a token-cache vocabulary.
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(options, folder / "options.json")
    shutil.copy(weights, folder / "weights.hdf5")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\n<UNK>\nthe", encoding="utf-8")
    spec = {"model": str(folder), "vocab": str(vocab)}
    assert model_spec.model_files_identity(spec) == dict(
        pair, vocabulary=_sha256(vocab)
    )
    # One byte of the weights changed: another identity.
    flip_last_byte(folder / "weights.hdf5")
    changed = model_spec.model_files_identity({"model": str(folder)})
    assert changed["weights"] != pair["weights"]
    assert changed["options"] == pair["options"]
    # The shipped preset by name: its own files, offline.
    preset = model_spec.model_files_identity({"preset": "elmo_small_en"})
    shipped = keras_elmo.presets.preset_dir("elmo_small_en")
    assert preset["kind"] == "files"
    assert preset["weights"] == _sha256(os.path.join(shipped, "weights.hdf5"))
    assert model_spec.model_files_identity({}) == preset  # the default
    assert model_spec.model_files_identity(
        {"random_weights": "tiny", "seed": 3}
    ) == {
        "kind": "random_weights",
        "architecture": "tiny",
        "seed": 3,
        "vocabulary": None,
    }
    # What would be downloaded is named, not fetched.
    url = "https://example.invalid/model/"
    assert model_spec.model_files_identity({"model": url}) == {
        "kind": "source",
        "source": repr(url),
    }


def test_an_hdf5_file_keeps_a_record_of_any_size(tmp_path):
    """The root attribute is a variable-length string, so a record of many
    input files (an `embed-records` run over a folder) is kept whole,
    beyond HDF5's 64 KiB limit on attributes stored in the header."""
    import h5py

    files = {
        f"/data/part-{i:05d}.txt": {
            "size": i,
            "mtime_ns": 1,
            "sha256": "a" * 64,
        }
        for i in range(2000)
    }
    record = run_identity.run_record(
        {"kind": "files", "weights": "b" * 64},
        {"files": files},
        {"layers": "top", "dtype": "float32"},
    )
    path = str(tmp_path / "out.hdf5")
    with h5py.File(path, "w") as f:
        f.create_dataset("0", data=np.zeros((2, 4), np.float32))
        run_identity.set_run_attribute(f, record)
    assert len(json.dumps(record)) > 64 << 10
    assert run_identity.hdf5_run_record(path) == record
    with h5py.File(path, "r") as f:
        assert sorted(f) == ["0"]
        assert sorted(f.attrs) == [run_identity.RUN_ATTRIBUTE]
    with h5py.File(path, "w") as f:  # a file of an earlier version
        f.create_dataset("0", data=np.zeros((2, 4), np.float32))
    assert run_identity.hdf5_run_record(path) is None
