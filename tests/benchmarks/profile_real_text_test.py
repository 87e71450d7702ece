"""benchmarks/profile_real_text.py: its stages compose to the whole biLM."""

import gzip
import json

import pytest

from tests.benchmarks.scripts import SAMPLE
from tests.benchmarks.scripts import load_benchmark


@pytest.mark.large
def test_profile_stages_compose_to_the_whole_bilm(tmp_path):
    results = tmp_path / "profile.json"
    load_benchmark("profile_real_text").main(
        [
            "--text", SAMPLE,
            "--preset", "tiny",
            "--lines", "40",
            "--runs", "1",
            "--results", str(results),
        ]
    )  # fmt: skip
    payload = json.loads(results.read_text())
    # The staged pipeline computes what bilm(char_ids) computes.
    assert payload["max_abs_staged_minus_whole"] < 1e-5
    stages = payload["stages"]
    assert list(stages) == [
        "char_ids", "boundaries_unique", "char_cnn", "highway",
        "projection_gather", "bilstm", "outputs",
    ]  # fmt: skip
    assert sum(s["share"] for s in stages.values()) == pytest.approx(1, 1e-3)
    # The biLSTM's FLOPs: every real token plus <S> and </S> per
    # sentence, through both directions of each layer (NumPy-free count).
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as f:
        sentences = [line.split() for line in f if len(line.split()) >= 3]
    sentences = [s[:64] for s in sentences[:40]]
    tokens = sum(len(s) + 2 for s in sentences)
    import keras_elmo

    cfg = keras_elmo.BiLMConfig.from_architecture("tiny")
    h, p = cfg.lstm_units, cfg.projection_dim
    per_token = 2 * cfg.num_layers * (2 * 2 * p * 4 * h + 2 * h * p)
    assert stages["bilstm"]["gflop"] == round(tokens * per_token / 1e9, 3)
    assert payload["workload"]["tokens"] == tokens - 2 * len(sentences)
    assert payload["provenance"]["command"]
