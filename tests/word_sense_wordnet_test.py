"""WordNet word-sense evaluation: parser, lemma matching, split rules,
nearest-mean classifier, bootstrap, fetch; offline (synthetic data)."""

import hashlib
import io
import json
import os
import tarfile

import numpy as np
import pytest

from tests.conftest import load_example

fetch_wordnet = load_example("fetch_wordnet")
nearest_sense = load_example("nearest_sense")
ws = load_example("wordnet_senses")

MINI = os.path.join(os.path.dirname(__file__), "fixtures", "wordnet_mini")


def triples(examples):
    return sorted(
        (e.lemma, e.pos, e.sense, " ".join(e.tokens), e.position)
        for e in examples
    )


# --- parser ---------------------------------------------------------------


def test_parse_data_line_words_examples_and_markers():
    line = (
        "00001740 00 a 0b able(p) 0 x 0 y 0 z 0 a 0 b 0 c 0 d 0 e 0 f 0 "
        'g 0 000 | having means; "able to swim"; "she was able"  \n'
    )
    synset = ws.parse_data_line(line, "a")
    assert synset.offset == "00001740"
    # w_cnt is hexadecimal: 0b = 11 words.
    assert synset.lemmas == tuple("able x y z a b c d e f g".split())
    assert synset.examples == ("able to swim", "she was able")


def test_parse_data_line_skips_header_and_names_bad_lines():
    assert ws.parse_data_line('  1 licence "AS IS"\n', "n") is None
    with pytest.raises(ValueError, match="WordNet data line"):
        ws.parse_data_line("00000001 03 n zz bank 0 | gloss\n", "n")
    with pytest.raises(ValueError, match="Truncated"):
        ws.parse_data_line("00000001 03 n 03 bank 0 | gloss\n", "n")


def test_read_fixture_synsets_ranks_and_exceptions():
    nouns = ws.read_synsets(MINI, "n")
    assert [s.offset for s in nouns] == [
        "00000100",
        "00000200",
        "00000300",
        "00000400",
        "00000500",
    ]
    assert ws.read_synsets(MINI, "a")[0].lemmas == ("green",)
    ranks = ws.read_sense_ranks(MINI, "n")
    assert ranks == {
        ("bank", "00000200"): 1,
        ("bank", "00000100"): 2,
        ("bank", "00000500"): 3,
        ("mouse", "00000400"): 1,
        ("mouse", "00000300"): 2,
    }
    assert ws.read_exceptions(MINI, "a") == {"better": ["good", "well"]}


def test_tokenizer_is_the_training_corpus_one():
    assert ws.tokenize("a mouse's tail, isn't it?") == [
        "a",
        "mouse's",
        "tail",
        ",",
        "is",
        "n't",
        "it",
        "?",
    ]
    assert ws.tokenize("well-known U.S. 3.5 ...") == [
        "well-known",
        "U.S.",
        "3.5",
        "...",
    ]


# --- lemma matching -------------------------------------------------------


@pytest.mark.parametrize(
    "token, pos, lemma, found",
    [
        ("Banks", "n", "bank", True),  # -s, case
        ("mice", "n", "mouse", True),  # exception list
        ("mouse's", "n", "mouse", True),  # possessive
        ("churches", "n", "church", True),  # -ches
        ("berries", "n", "berry", True),  # -ies
        ("running", "v", "run", True),  # exception list (doubling)
        ("runs", "v", "run", True),
        ("baked", "v", "bake", True),  # -ed -> -e
        ("greener", "a", "green", True),  # -er
        ("better", "a", "good", True),  # exception list
        ("running", "n", "run", False),  # nouns do not strip -ing
        ("runner", "v", "run", False),
        ("s", "n", "", False),  # never strips a whole word
    ],
)
def test_base_forms(token, pos, lemma, found):
    exceptions = {
        "n": {"mice": ["mouse"]},
        "v": {"running": ["run"]},
        "a": {"better": ["good", "well"]},
    }[pos]
    assert (lemma in ws.base_forms(token, pos, exceptions)) is found


def test_find_lemma_returns_the_first_match():
    tokens = ["the", "bank", "of", "banks"]
    assert ws.find_lemma(tokens, "bank", "n", {}) == 1
    assert ws.find_lemma(tokens, "river", "n", {}) is None


def test_fixture_examples_exactly():
    examples, ranks = ws.load_examples(MINI)
    assert triples(examples) == sorted(
        [
            # "he cashed a check at the bank" is under 100 and 500: dropped.
            (
                "bank",
                "n",
                "00000100",
                "that bank holds the mortgage on my home",
                1,
            ),
            ("bank", "n", "00000100", "the banks closed early", 1),
            (
                "bank",
                "n",
                "00000200",
                "they pulled the canoe up on the bank",
                7,
            ),
            ("bank", "n", "00000200", "he sat on the bank of the river", 4),
            ("mouse", "n", "00000300", "move the mouse to the left", 2),
            ("mouse", "n", "00000400", "the mice ran away", 1),
            ("mouse", "n", "00000400", "a mouse's tail", 1),
            ("run", "v", "00001000", "she ran to the store", 1),
            ("run", "v", "00001000", "the children are running", 3),
            ("run", "v", "00001000", "he runs every day", 1),
            ("run", "v", "00002000", "run the dishwasher", 0),
            ("run", "v", "00002000", "who runs this company", 1),
            ("breathe", "v", "00005000", "I can breathe better", 2),
            ("green", "a", "00003000", "greener pastures", 0),
            ("green", "a", "00003000", "a green apple", 1),
            ("green", "a", "00003100", "a green recruit", 1),
            ("green", "a", "00003100", "he was too green for the job", 3),
            ("well", "r", "00004000", "the children behaved well", 3),
        ]
    )
    assert ranks[("green", "a", "00003100")] == 1
    assert ranks[("run", "v", "00002000")] == 2


def test_group_by_lemma_thresholds():
    examples, _ = ws.load_examples(MINI)
    every = ws.group_by_lemma(examples, min_examples=1)
    assert list(every) == [
        ("bank", "n"),
        ("green", "a"),
        ("mouse", "n"),
        ("run", "v"),
    ]  # breathe and well have one sense
    assert {s: len(v) for s, v in every[("run", "v")].items()} == {
        "00001000": 3,
        "00002000": 2,
    }
    # mouse has only one sense with two examples.
    assert list(ws.group_by_lemma(examples, min_examples=2)) == [
        ("bank", "n"),
        ("green", "a"),
        ("run", "v"),
    ]


# --- split ----------------------------------------------------------------


def fake_senses(sizes):
    return {
        sense: [
            ws.Example("w", "n", sense, (f"{sense}{i}",), 0) for i in range(n)
        ]
        for sense, n in sizes.items()
    }


def test_split_rules():
    sizes = {"A": 5, "B": 2, "C": 1, "D": 1, "E": 1, "F": 4}
    train, test = ws.split_lemma(fake_senses(sizes), np.random.default_rng(3))
    count = lambda items, s: sum(e.sense == s for e in items)  # noqa: E731
    # n >= 2: floor(n / 2) to test, the rest to train.
    assert [count(test, s) for s in "ABF"] == [2, 1, 2]
    assert [count(train, s) for s in "ABF"] == [3, 1, 2]
    # one-example senses: train, test, train in shuffled order.
    singles = [count(train, s) for s in "CDE"]
    assert sorted(singles) == [0, 1, 1]
    assert len(set(e.tokens for e in train + test)) == sum(sizes.values())


def test_split_always_leaves_training_examples():
    for seed in range(20):
        train, test = ws.split_lemma(
            fake_senses({"A": 1, "B": 1}), np.random.default_rng(seed)
        )
        assert len(train) == 1 and len(test) == 1
    with pytest.raises(ValueError, match="test_fraction"):
        ws.split_lemma(fake_senses({"A": 2}), np.random.default_rng(0), 0.7)


def test_split_is_seeded_per_lemma():
    examples, _ = ws.load_examples(MINI)
    groups = ws.group_by_lemma(examples)
    first = ws.split_examples(groups, seed=0)
    assert first == ws.split_examples(groups, seed=0)
    # A lemma's split does not depend on the other lemmas.
    alone = ws.split_examples({("run", "v"): groups[("run", "v")]}, seed=0)
    assert triples(alone[1]) == triples(e for e in first[1] if e.lemma == "run")
    seeds = {
        tuple(triples(ws.split_examples(groups, seed=s)[1])) for s in range(8)
    }
    assert len(seeds) > 1


# --- classifier -----------------------------------------------------------


def test_nearest_mean_matches_a_numpy_rederivation():
    rng = np.random.default_rng(0)
    train_lemma = rng.integers(0, 4, size=60)
    train_sense = train_lemma * 10 + rng.integers(0, 3, size=60)
    train_x = rng.normal(size=(60, 7))
    test_lemma = rng.integers(0, 4, size=25)
    test_x = rng.normal(size=(25, 7))
    got = nearest_sense.nearest_mean(
        train_x, train_lemma, train_sense, test_x, test_lemma
    )
    for i in range(25):
        best, best_cos = None, -np.inf
        for s in sorted(set(train_sense[train_lemma == test_lemma[i]])):
            mean = train_x[train_sense == s].mean(axis=0)
            cos = mean @ test_x[i] / np.linalg.norm(mean)
            cos /= np.linalg.norm(test_x[i])
            if cos > best_cos:
                best, best_cos = s, cos
        assert got[i] == best


def test_nearest_mean_uses_the_mean_not_the_nearest_example():
    # Sense 0: examples (1, 0.3) and (1, -0.3), mean (1, 0).
    # Sense 1: examples (1, 0.06) and (0, 1), mean (0.5, 0.53).
    # The test point (1, 0.05) is nearest to one example of sense 1
    # (cosine 0.99999 vs 0.971), but to the mean of sense 0 (0.999 vs
    # 0.722).
    train_x = np.array([[1, 0.3], [1, -0.3], [1, 0.06], [0, 1]])
    got = nearest_sense.nearest_mean(
        train_x, np.zeros(4, int), np.array([0, 0, 1, 1]), [[1, 0.05]], [0]
    )
    assert got.tolist() == [0]


def test_nearest_mean_ties_go_to_the_earlier_sense():
    got = nearest_sense.nearest_mean(
        [[1.0, 0.0], [2.0, 0.0]], [0, 0], [5, 3], [[1.0, 1.0]], [0]
    )
    assert got.tolist() == [3]
    with pytest.raises(ValueError, match="training examples"):
        nearest_sense.nearest_mean([[1.0]], [0], [0], [[1.0]], [1])


def test_baselines_on_known_inputs():
    train_lemma = np.array([0, 0, 0, 1, 1, 2, 2])
    train_sense = np.array([2, 1, 2, 4, 3, 6, 5])
    test_lemma = np.array([0, 0, 1, 2, 2])
    test_sense = np.array([2, 0, 4, 5, 7])
    mfs = nearest_sense.most_frequent_sense(
        train_lemma, train_sense, test_lemma
    )
    assert mfs.tolist() == [2, 2, 3, 5, 5]  # lemma 1, 2: ties -> lower id
    first = nearest_sense.first_sense(train_lemma, train_sense, test_lemma)
    assert first.tolist() == [1, 1, 3, 5, 5]
    # candidates {1,2}, {1,2}, {3,4}, {5,6}, {5,6}; gold 0 and 7 unseen.
    expected = (1 / 2 + 0 + 1 / 2 + 1 / 2 + 0) / 5
    assert nearest_sense.random_sense_accuracy(
        train_lemma, train_sense, test_lemma, test_sense
    ) == pytest.approx(expected)


# --- bootstrap ------------------------------------------------------------


def test_bootstrap_on_known_inputs():
    acc, low, high, samples = nearest_sense.bootstrap(np.ones(50), 100)
    assert (acc, low, high) == (1.0, 1.0, 1.0)
    assert samples.shape == (1, 100)
    correct = np.arange(2000) % 4 == 0  # accuracy 0.25
    acc, low, high, _ = nearest_sense.bootstrap(correct, 1000, seed=1)
    assert acc == 0.25
    half_width = 1.96 * np.sqrt(0.25 * 0.75 / 2000)  # normal approximation
    assert low == pytest.approx(0.25 - half_width, abs=0.004)
    assert high == pytest.approx(0.25 + half_width, abs=0.004)
    # Seeded: the same draws again; rows are paired.
    again = nearest_sense.bootstrap(np.stack([correct, correct]), 1000, 1)
    assert again[1].tolist() == [low, low]


def test_paired_difference_on_known_inputs():
    rng = np.random.default_rng(0)
    b = rng.random(20) < 0.5
    same = nearest_sense.paired_difference(b, b, 500)
    assert same == {
        "difference": 0.0,
        "low": 0.0,
        "high": 0.0,
        "fraction_not_positive": 1.0,
    }
    # a is right on one more example than b: every resample's difference
    # is >= 0, and it is 0 exactly when that example is never drawn,
    # which has probability (1 - 1/20)^20 = 0.358.
    a = b.copy()
    a[np.flatnonzero(~b)[0]] = True
    diff = nearest_sense.paired_difference(a, b, 4000, seed=2)
    assert diff["difference"] == pytest.approx(1 / 20)
    assert diff["low"] == 0.0
    assert diff["fraction_not_positive"] == pytest.approx(0.95**20, abs=0.025)


def test_bootstrap_by_group():
    # Two groups: group 0 all right (3 examples), group 1 all wrong (1).
    correct = np.array([1.0, 1.0, 1.0, 0.0])
    _, _, _, samples = nearest_sense.bootstrap(
        correct, 400, seed=0, groups=[7, 7, 7, 9]
    )
    # Draws of 2 groups: {0,0} -> 1, {1,1} -> 0, one each -> 3/4.
    values, counts = np.unique(samples, return_counts=True)
    assert values.tolist() == [0.0, 0.75, 1.0]
    assert counts / 400 == pytest.approx([0.25, 0.5, 0.25], abs=0.07)
    with pytest.raises(ValueError, match="groups"):
        nearest_sense.bootstrap(correct, 10, groups=[1, 2])


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
