"""`keras-elmo embed`: the allennlp elmo HDF5 layout, order, blank lines,
--resume and --force."""

import json
import os

import h5py
import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.export import hdf5_embedding as embed_cli

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


@pytest.mark.large
def test_resume_after_an_interruption(reference, tmp_path, monkeypatch, capsys):
    options, weights, expected = reference
    src = write_input(tmp_path / "in.txt")
    dst = str(tmp_path / "out.hdf5")
    monkeypatch.setattr(embed_cli, "CHUNK_BATCHES", 1)  # 2-line chunks
    real_embed_chunk = embed_cli._embed_chunk
    embedded = []

    def interrupted(embedder, todo, mode, batch_size, out):
        if len(embedded) >= 4:
            raise KeyboardInterrupt
        embedded.extend(index for index, _ in todo)
        real_embed_chunk(embedder, todo, mode, batch_size, out)

    monkeypatch.setattr(embed_cli, "_embed_chunk", interrupted)
    with pytest.raises(KeyboardInterrupt):
        embed(options, weights, src, dst)
    assert not os.path.exists(dst)
    with h5py.File(dst + ".partial", "r") as f:
        assert sorted(f) == ["0", "1", "2", "3"]
    # Tamper with the partial file: a kept dataset and a wrong-shape one.
    with h5py.File(dst + ".partial", "a") as f:
        f["1"][...] = 7.0
        del f["3"]
        f.create_dataset("3", data=np.zeros((3, 2, 32), np.float32))

    assert embed(options, weights, src, dst) == 2
    assert "pass --resume" in capsys.readouterr().err
    embedded.clear()
    monkeypatch.setattr(
        embed_cli,
        "_embed_chunk",
        lambda *a: (embedded.extend(i for i, _ in a[1]), real_embed_chunk(*a)),
    )
    assert embed(options, weights, src, dst, "--resume") == 0
    assert sorted(embedded) == [3] + list(range(4, len(LINES)))
    assert not os.path.exists(dst + ".partial")
    with h5py.File(dst, "r") as f:
        assert (f["1"][()] == 7.0).all()  # kept, not recomputed
        for i, line in enumerate(LINES):
            if i != 1:
                np.testing.assert_allclose(
                    f[str(i)][()], expected[line], atol=1e-5
                )
        assert len(json.loads(f["sentence_to_index"][0])) == 8  # unique
        assert not dict(f.attrs)


@pytest.mark.large
def test_resume_refuses_other_options(reference, tmp_path, capsys):
    options, weights, _ = reference
    src = write_input(tmp_path / "in.txt", LINES[:2])
    dst = str(tmp_path / "out.hdf5")
    with h5py.File(dst + ".partial", "w") as f:
        f.attrs["keras_elmo_layers"] = "top"
        f.attrs["keras_elmo_num_layers"] = 3
        f.attrs["keras_elmo_dim"] = 32
    assert embed(options, weights, src, dst, "--all", "--resume") == 2
    assert "use the same options" in capsys.readouterr().err
    assert embed(options, weights, src, dst, "--top", "--resume") == 0


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
