"""WordNet word-sense evaluation, end to end: fetching WordNet (a
synthetic .deb served from file://) and the whole command on the
`wordnet_mini` fixture with a random `tiny` biLM (and CoVe layers).
"""

import hashlib
import io
import json
import os
import tarfile

import numpy as np
import pytest

from tests.conftest import load_example

fetch_wordnet = load_example("fetch_wordnet")
ws = load_example("wordnet_senses")
MINI = os.path.join(os.path.dirname(__file__), "fixtures", "wordnet_mini")


# --- fetch (a synthetic .deb served from file://) -------------------------


def ar_archive(members):
    out = [b"!<arch>\n"]
    for name, data in members:
        out.append(
            name.encode().ljust(16)
            + b"0".ljust(12)
            + b"0".ljust(6)
            + b"0".ljust(6)
            + b"100644".ljust(8)
            + str(len(data)).encode().ljust(10)
            + b"`\n"
        )
        out.append(data + (b"\n" if len(data) % 2 else b""))
    return b"".join(out)


def tar_bytes(files, mode):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def mini_deb(tmp_path):
    files = {"./usr/share/doc/wordnet-base/copyright": b"WordNet 3.0 licence"}
    for name in fetch_wordnet.DICT_FILES:
        with open(os.path.join(MINI, name), "rb") as f:
            files[f"./usr/share/wordnet/{name}"] = f.read()
    files["./usr/share/wordnet/lexnames"] = b"not extracted"
    deb = ar_archive(
        [
            ("debian-binary", b"2.0\n"),
            ("control.tar.xz", tar_bytes({"./control": b"x"}, "w:xz")),
            ("data.tar.xz", tar_bytes(files, "w:xz")),
        ]
    )
    path = tmp_path / "served" / fetch_wordnet.DEB_NAME
    path.parent.mkdir()
    path.write_bytes(deb)
    return path, hashlib.sha256(deb).hexdigest()


def test_fetch_verifies_and_unpacks(mini_deb, tmp_path):
    path, sha256 = mini_deb
    out = tmp_path / "cache"
    dict_dir, checksum = fetch_wordnet.fetch(str(out), path.as_uri(), sha256)
    assert checksum == sha256
    assert sorted(os.listdir(dict_dir)) == sorted(fetch_wordnet.DICT_FILES)
    for name in fetch_wordnet.DICT_FILES:
        with open(os.path.join(dict_dir, name), "rb") as f:
            assert f.read() == open(os.path.join(MINI, name), "rb").read()
    assert (out / "LICENSE").read_bytes() == b"WordNet 3.0 licence"
    # Cached: a second call neither downloads nor needs the source.
    path.unlink()
    assert fetch_wordnet.fetch(str(out), path.as_uri(), sha256)[0] == dict_dir


def test_fetch_errors_are_clear(mini_deb, tmp_path):
    path, sha256 = mini_deb
    with pytest.raises(RuntimeError, match="expected SHA-256"):
        fetch_wordnet.fetch(str(tmp_path / "a"), path.as_uri(), "0" * 64)
    missing = (tmp_path / "nowhere.deb").as_uri()
    with pytest.raises(RuntimeError, match="Cannot download WordNet"):
        fetch_wordnet.fetch(str(tmp_path / "b"), missing, sha256)
    with pytest.raises(ValueError, match="ar"):
        fetch_wordnet.read_ar(b"PK\x03\x04 not a deb")


# --- the whole command, on the fixture and a random `tiny` biLM -----------


def command_line(mini_deb, tmp_path, split_seeds):
    """`word_sense_wordnet.py` arguments for the fixture and `tiny` biLM,
    writing `wsd.json` and `RESULTS.md` under `tmp_path`."""
    path, sha256 = mini_deb
    return [
        "--data-dir",
        str(tmp_path / "cache"),
        "--url",
        path.as_uri(),
        "--sha256",
        sha256,
        "--model",
        "tiny",
        "--resamples",
        "50",
        "--split-seeds",
        split_seeds,
        "--out-json",
        str(tmp_path / "wsd.json"),
        "--results-md",
        str(tmp_path / "RESULTS.md"),
    ]


@pytest.mark.large
def test_word_sense_wordnet_end_to_end(mini_deb, tmp_path):
    word_sense_wordnet = load_example("word_sense_wordnet")

    path, sha256 = mini_deb
    results_md = tmp_path / "RESULTS.md"
    results_md.write_text("# Results\n\nOther section.\n")
    argv = command_line(mini_deb, tmp_path, "1,2")
    results = word_sense_wordnet.main(argv)
    assert json.loads((tmp_path / "wsd.json").read_text()) == json.loads(
        json.dumps(results)
    )
    main, every = results["settings"]["main"], results["settings"]["all_senses"]
    # main: bank, green, run (2 senses with >= 2 examples each): per sense
    # floor(n / 2) test examples, 1 each.
    assert main["counts"]["lemmas"] == 3
    assert main["counts"]["senses"] == 6
    assert main["counts"]["test_examples"] == 6
    assert main["counts"]["train_examples"] == 7
    # all_senses adds mouse: its one-example sense goes to train.
    assert every["counts"]["lemmas"] == 4
    assert every["counts"]["test_examples"] == 7
    assert every["counts"]["test_senses_unseen_in_train"] == 0
    assert set(main["methods"]) == {
        "layer_0",
        "layer_1",
        "layer_2",
        "average",
        "most_frequent_sense",
        "wordnet_first_sense",
    }
    for method in main["methods"].values():
        assert method["low"] <= method["f1"] <= method["high"]
    assert results["provenance"]["cpu_cores"] == os.cpu_count()
    assert results["data"]["sha256"] == sha256
    text = results_md.read_text()
    assert text.startswith("# Results\n\nOther section.\n")
    assert "| biLM layer 2 (top biLSTM) |" in text
    assert list(results["main_other_split_seeds"]) == ["1", "2"]
    assert text.count("\n| 2 | ") == 1  # the split-seed table's last row
    # The section can be redrawn from the JSON alone.
    word_sense_report = load_example("word_sense_report")
    redrawn = tmp_path / "redrawn.md"
    word_sense_report.main([str(tmp_path / "wsd.json"), str(redrawn)])
    assert redrawn.read_text().strip() in text
    # Rerunning replaces the generated section instead of adding one.
    word_sense_wordnet.main(argv)
    assert results_md.read_text().count("## Word sense disambiguation") == 1


@pytest.mark.large
def test_word_sense_wordnet_with_cove_layers(mini_deb, tmp_path):
    """`--cove-encoder`: CoVe's three layers are classified like the biLM's,
    from vectors equal to the encoder's for each sentence alone."""
    word_sense_wordnet = load_example("word_sense_wordnet")
    word_sense_cove = load_example("word_sense_cove")
    cove_model = load_example("cove_model")
    cove_layer_probe = load_example("cove_layer_probe")

    glove = tmp_path / "glove"
    glove.mkdir()
    words = ["bank", "river", "money", "green", "run", "the", "a", "mouse"]
    (glove / "words.txt").write_text("\n".join(words) + "\n")
    rng = np.random.default_rng(0)
    np.save(glove / "vectors.npy", rng.normal(size=(8, 50)).astype("f4"))
    encoder_path = str(tmp_path / "cove_encoder.keras")
    cove_model.build_encoder(50, 32).save(encoder_path)

    argv = command_line(mini_deb, tmp_path, "1") + [
        "--cove-encoder",
        encoder_path,
        "--glove-dir",
        str(glove),
    ]
    results = word_sense_wordnet.main(argv)
    main = results["settings"]["main"]
    assert {"cove_0", "cove_1", "cove_2"} <= set(main["methods"])
    assert "layer_2_minus_cove_2" in main["paired_differences"]
    assert set(results["main_other_split_seeds"]["1"]) == set(main["methods"])
    assert (
        results["cove"]["sha256"]
        == hashlib.sha256(open(encoder_path, "rb").read()).hexdigest()
    )
    text = (tmp_path / "RESULTS.md").read_text()
    assert "| CoVe second biLSTM layer (CoVe) |" in text
    assert "--cove-encoder" in text  # the command line, from provenance

    # The vectors: each target's row of `cove_layers` on its sentence
    # alone, whatever the chunking (within float16 storage rounding).
    examples, _ = ws.load_examples(MINI)
    vectors = word_sense_cove.cove_targets(encoder_path, str(glove), examples)
    again = word_sense_cove.cove_targets(
        encoder_path, str(glove), examples, chunk=1
    )
    assert vectors.keys() == again.keys()
    import keras

    encoder = keras.saving.load_model(encoder_path, safe_mode=True)
    table = (words, np.load(glove / "vectors.npy"))
    for (tokens, position), value in vectors.items():
        alone = cove_layer_probe.cove_layers(encoder, table, [list(tokens)])
        np.testing.assert_allclose(value, alone[position], atol=2e-3)
        np.testing.assert_allclose(again[(tokens, position)], value, atol=2e-3)
    assert value.shape == (3, 64)
