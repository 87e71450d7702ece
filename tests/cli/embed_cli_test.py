"""`keras-elmo embed`: the allennlp elmo HDF5 layout, order, blank lines,
--resume and --force."""

import hashlib
import json
import os
import shutil

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.embedding import hdf5_output as embed_cli
from keras_elmo.embedding.run_identity import bilm_identity
from keras_elmo.embedding.run_identity import hdf5_run_record

LINES = [
    "The cat sat on the mat .",
    "Hello",
    "",
    "ELMo gives each token a vector that depends on the whole sentence .",
    "  padded   with   spaces  ",
    "a b",
    "Hello",
    "naïve café , déjà vu",
    "   ",
    "one two three four five six seven eight nine ten eleven",
]


REAL_EMBED_CHUNK = embed_cli._embed_chunk


def write_input(path, lines=LINES):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def expected_layers(bilm, line):
    """`[L+1, n, 2P]` for one line embedded alone."""
    tokens = line.split()
    out = bilm(keras_elmo.batch_to_ids([tokens]))
    word = np.asarray(out["word_emb"])[0]
    layers = [np.concatenate([word, word], -1)]
    layers += [np.asarray(out[f"lstm_outputs{k}"])[0] for k in (1, 2)]
    return np.stack(layers)[:, : len(tokens)]


@pytest.fixture(scope="module")
def reference(reference_weights):
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    return (
        options,
        weights,
        {line: expected_layers(bilm, line) for line in LINES},
    )


def embed(options, weights, src, dst, *extra):
    argv = ["embed", src, dst, "--options", options, "--weights", weights]
    return main(argv + ["--batch-size", "2", *extra])


@pytest.mark.large
@pytest.mark.parametrize("mode", ["all", "top", "average"])
def test_layout_matches_the_bilm(reference, tmp_path, mode, capsys):
    options, weights, expected = reference
    src = write_input(tmp_path / "in.txt")
    dst = str(tmp_path / "out.hdf5")
    assert embed(options, weights, src, dst, f"--{mode}") == 0
    assert f"{len(LINES)}/{len(LINES)}" in capsys.readouterr().err  # Progbar
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.hdf5"]
    with h5py.File(dst, "r") as f:
        keys = sorted(k for k in f if k != "sentence_to_index")
        assert keys == sorted(str(i) for i in range(len(LINES)))
        for i, line in enumerate(LINES):
            layers = expected[line]
            want = {
                "all": layers,
                "top": layers[-1],
                "average": layers.mean(0),
            }[mode]
            got = f[str(i)]
            assert got.dtype == np.float32
            assert got.shape == want.shape, (i, line)
            np.testing.assert_allclose(got[()], want, atol=1e-5)
        # Blank lines: empty datasets, (3, 0, 2P) or (0, 2P).
        blank = (3, 0, 32) if mode == "all" else (0, 32)
        assert f["2"].shape == blank and f["8"].shape == blank
        index = f["sentence_to_index"]
        assert index.shape == (1,)
        mapping = json.loads(index[0])
    assert mapping["Hello"] == "6"  # a repeated sentence maps to its last line
    assert mapping["padded   with   spaces"] == "4"
    assert mapping["The cat sat on the mat ."] == "0"
    assert mapping[""] == "8"
    # The `allennlp elmo` layout: nothing but the line datasets and the
    # index; the run is a root attribute, which such readers ignore.
    with h5py.File(dst, "r") as f:
        assert sorted(f) == sorted(
            [str(i) for i in range(len(LINES))] + ["sentence_to_index"]
        )
        assert sorted(f.attrs) == ["keras_elmo_run"]
    assert hdf5_run_record(dst)["settings"]["layers"] == mode


@pytest.mark.large
def test_refuses_to_overwrite_without_force(reference, tmp_path, capsys):
    options, weights, _ = reference
    src = write_input(tmp_path / "in.txt", LINES[:3])
    dst = tmp_path / "out.hdf5"
    dst.write_bytes(b"precious")
    assert embed(options, weights, src, str(dst)) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert dst.read_bytes() == b"precious"
    assert embed(options, weights, src, str(dst), "--force") == 0
    with h5py.File(dst, "r") as f:
        assert f["0"].shape == (3, 7, 32)


def interrupt_after(monkeypatch, lines):
    """Makes `embed` stop (KeyboardInterrupt) once `lines` lines are
    embedded, in 2-line chunks; returns the list of embedded lines."""
    monkeypatch.setattr(embed_cli, "CHUNK_BATCHES", 1)  # 2-line chunks
    real_embed_chunk = embed_cli._embed_chunk
    embedded = []

    def interrupted(embedder, todo, mode, batch_size, out):
        if len(embedded) >= lines:
            raise KeyboardInterrupt
        embedded.extend(index for index, _ in todo)
        real_embed_chunk(embedder, todo, mode, batch_size, out)

    monkeypatch.setattr(embed_cli, "_embed_chunk", interrupted)
    return embedded


def count_embedded(monkeypatch):
    real_embed_chunk = REAL_EMBED_CHUNK
    embedded = []
    monkeypatch.setattr(
        embed_cli,
        "_embed_chunk",
        lambda *a: (embedded.extend(i for i, _ in a[1]), real_embed_chunk(*a)),
    )
    return embedded


@pytest.mark.large
def test_resume_after_an_interruption(reference, tmp_path, monkeypatch, capsys):
    options, weights, expected = reference
    src = write_input(tmp_path / "in.txt")
    dst = str(tmp_path / "out.hdf5")
    embedded = interrupt_after(monkeypatch, 6)
    with pytest.raises(KeyboardInterrupt):
        embed(options, weights, src, dst)
    assert embedded == [0, 1, 2, 3, 4, 5]
    assert not os.path.exists(dst)
    partial = dst + ".partial"
    assert sorted(os.listdir(partial)) == [
        "chunk-00000000.hdf5",
        "chunk-00000001.hdf5",
        "chunk-00000002.hdf5",
        "manifest.json",
    ]
    with h5py.File(os.path.join(partial, "chunk-00000001.hdf5"), "r") as f:
        assert sorted(f) == ["2", "3"] and f.attrs["start"] == 2
    os.remove(os.path.join(partial, "chunk-00000001.hdf5"))  # lost
    with open(os.path.join(partial, "manifest.json"), encoding="utf-8") as f:
        journal_run = json.load(f)["run"]

    assert embed(options, weights, src, dst) == 2
    assert "pass --resume" in capsys.readouterr().err
    embedded = count_embedded(monkeypatch)
    assert embed(options, weights, src, dst, "--resume") == 0
    assert sorted(embedded) == [2, 3] + list(range(6, len(LINES)))
    assert not os.path.exists(partial)
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.hdf5"]
    with h5py.File(dst, "r") as f:
        for i, line in enumerate(LINES):
            np.testing.assert_allclose(f[str(i)][()], expected[line], atol=1e-5)
        assert len(json.loads(f["sentence_to_index"][0])) == 8  # unique
        assert sorted(f.attrs) == ["keras_elmo_run"]
    # The finished file keeps the record of the journal it came from.
    assert hdf5_run_record(dst) == journal_run
    with open(src, "rb") as f:
        content = hashlib.sha256(f.read()).hexdigest()
    assert journal_run == {
        "model": bilm_identity(keras_elmo.BiLM.from_allennlp(options, weights)),
        "input": {
            "size": os.path.getsize(src),
            "mtime_ns": os.stat(src).st_mtime_ns,
            "sha256": content,
        },
        "settings": {
            "layers": "all",
            "num_layers": 3,
            "dim": 32,
            "dtype": "float32",
            "max_tokens": None,
        },
        "version": keras_elmo.__version__,
    }


@pytest.mark.large
def test_resume_refuses_another_model_input_or_options(
    reference, tmp_path, monkeypatch, capsys
):
    options, weights, expected = reference
    src = write_input(tmp_path / "in.txt")
    dst = str(tmp_path / "out.hdf5")
    interrupt_after(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        embed(options, weights, src, dst, "--top")
    monkeypatch.undo()
    capsys.readouterr()

    assert embed(options, weights, src, dst, "--all", "--resume") == 2
    err = capsys.readouterr().err
    assert "was started by another run; changed: layers ('top' -> 'all')" in err
    assert "--force (without --resume) to start over" in err

    argv = ["embed", src, dst, "--top", "--random-weights", "tiny"]
    assert main(argv + ["--batch-size", "2", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "changed: the model (bilm, options" in err
    assert "layers" not in err  # only what differs

    # Line 0 edited, same token count: the stale vectors are refused.
    journal = snapshot(dst + ".partial")
    edited = ["The dog sat on the mat ."] + LINES[1:]
    write_input(tmp_path / "in.txt", edited)
    assert embed(options, weights, src, dst, "--top", "--resume") == 2
    assert "changed: the input file's content (size" in capsys.readouterr().err
    assert not os.path.exists(dst)
    assert snapshot(dst + ".partial") == journal

    write_input(tmp_path / "in.txt")  # back as it was (a new mtime)
    embedded = count_embedded(monkeypatch)
    assert embed(options, weights, src, dst, "--top", "--resume") == 0
    assert sorted(embedded) == list(range(4, len(LINES)))
    with h5py.File(dst, "r") as f:
        for i, line in enumerate(LINES):
            np.testing.assert_allclose(
                f[str(i)][()], expected[line][-1], atol=1e-5
            )


def snapshot(folder):
    """`{name: bytes}` of a journal folder's files."""
    found = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            found[name] = f.read()
    return found


@pytest.mark.large
def test_resume_refuses_the_same_options_with_other_weights(
    reference, tmp_path, monkeypatch, capsys
):
    """Issue 34's case: interrupted with model A, resumed with model B of
    the same options whose weights differ in one value."""
    options, weights, expected = reference
    models = {name: tmp_path / name for name in ("a", "b")}
    for folder in models.values():
        folder.mkdir()
        shutil.copy(options, folder / "options.json")
        shutil.copy(weights, folder / "weights.hdf5")
    with h5py.File(models["b"] / "weights.hdf5", "r+") as f:
        f["CNN_proj/W_proj"][0, 0] = f["CNN_proj/W_proj"][0, 0] + 0.5
    ids = {
        name: bilm_identity(
            keras_elmo.BiLM.from_allennlp(
                str(folder / "options.json"), str(folder / "weights.hdf5")
            )
        )
        for name, folder in models.items()
    }
    assert ids["a"]["options"] == ids["b"]["options"]
    assert ids["a"]["weights"] != ids["b"]["weights"]
    src = write_input(tmp_path / "in.txt")
    dst = str(tmp_path / "out.hdf5")
    partial = dst + ".partial"

    def embed_with(name, *extra):
        argv = ["embed", src, dst, "--model", str(models[name])]
        return main(argv + ["--batch-size", "2", *extra])

    interrupt_after(monkeypatch, 4)
    with pytest.raises(KeyboardInterrupt):
        embed_with("a")
    monkeypatch.undo()
    capsys.readouterr()
    journal = snapshot(partial)
    assert sorted(journal) == [
        "chunk-00000000.hdf5",
        "chunk-00000001.hdf5",
        "manifest.json",
    ]

    assert embed_with("b", "--resume") == 2
    err = capsys.readouterr().err
    a, b = ids["a"], ids["b"]
    assert (
        f"was started by another run; changed: the model (bilm, options "
        f"{a['options'][:12]}, weights {a['weights'][:12]} -> bilm, options "
        f"{b['options'][:12]}, weights {b['weights'][:12]}). Its vectors "
        "are not mixed with another run's"
    ) in err
    assert "input" not in err.split("changed:")[1].split(".")[0]
    assert not os.path.exists(dst)  # nothing written to OUTPUT
    assert snapshot(partial) == journal  # the journal intact

    # Model A resumes it: only the lines not committed are embedded.
    embedded = count_embedded(monkeypatch)
    assert embed_with("a", "--resume") == 0
    assert sorted(embedded) == list(range(4, len(LINES)))
    with h5py.File(dst, "r") as f:
        for i, line in enumerate(LINES):
            np.testing.assert_allclose(f[str(i)][()], expected[line], atol=1e-5)
    assert hdf5_run_record(dst)["model"] == a


@pytest.mark.large
def test_resume_refuses_a_partial_file_of_an_earlier_version(
    reference, tmp_path, capsys
):
    options, weights, _ = reference
    src = write_input(tmp_path / "in.txt", LINES[:2])
    dst = str(tmp_path / "out.hdf5")
    with h5py.File(dst + ".partial", "w") as f:
        f.attrs["keras_elmo_layers"] = "top"
    assert embed(options, weights, src, dst, "--top", "--resume") == 2
    assert "earlier keras_elmo version" in capsys.readouterr().err
    assert embed(options, weights, src, dst, "--top", "--force") == 0
    assert not os.path.exists(dst + ".partial")


@pytest.mark.large
def test_saved_model_and_default_model(reference, tmp_path, capsys):
    from keras_elmo.export.saved_model import export_saved_model

    options, weights, expected = reference
    base = tmp_path / "served"
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    export_saved_model(bilm, str(base / "3"))
    src = write_input(tmp_path / "in.txt")
    for model in (str(base / "3"), str(base)):  # model dir or base dir
        dst = str(tmp_path / "out.hdf5")
        argv = ["embed", src, dst, "--top", "--model", model, "--force"]
        assert main(argv) == 0
        assert f"SavedModel {base / '3'}" in capsys.readouterr().err
        with h5py.File(dst, "r") as f:
            for i, line in enumerate(LINES):
                np.testing.assert_allclose(
                    f[str(i)][()], expected[line][-1], atol=1e-5
                )

    # Random weights are an explicit choice, and loud.
    dst = str(tmp_path / "random.hdf5")
    assert main(["embed", src, dst, "--average", "--preset", "tiny"]) == 2
    assert "--random-weights tiny" in capsys.readouterr().err
    argv = ["embed", src, dst, "--average", "--random-weights", "tiny"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "WARNING: no trained model given" in err and "RANDOMLY" in err
    with h5py.File(dst, "r") as f:
        assert f["0"].shape == (7, 32)
