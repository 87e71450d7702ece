"""The real-text workloads of the side-by-side benchmark (pure Python).

Shared by `benchmarks/text_inference.py` (keras_elmo) and
`benchmarks/allennlp_text_bench.py` (AllenNLP, run in the reference
venv), so both time exactly the same batches:

- `file`: the first `lines` lines of `text` with at least `min_tokens`
  whitespace tokens, cut at `max_tokens`, in file order, in batches of
  `batch` (natural lengths: each batch is padded to its longest line);
- `sorted`: the same sentences sorted by length (longest first, ties in
  file order), then batched: what `keras-elmo embed` does to a file;
- `uniform`: `bench_allennlp.py`'s 64 x 20 batch of its word list.
"""

import gzip
import json
import os
import random

WORKLOADS = ("file", "sorted", "uniform")
# The en_pd_lm corpus in ../shared/data beside the checkout.
EN_PD_LM = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..",
    "..",
    "shared",
    "data",
    "en_pd_lm",
)
# Where shared/ref/setup_ref.sh puts the `original` AllenNLP weights.
WEIGHTS_DIR = "/tmp/elmo_ref/w"

# shared/ref/bench_allennlp.py's word list and draw (`random.Random(0)`).
WORDS = (
    "the of and to in a is that for it as was with be by on not he I this "
    "are or his from at which but have an they you were her she there one "
    "all we their can has been if more when will would who so no "
    "government president international nevertheless approximately "
    "characteristics Zürich café naïve 2023 3.14 , . ; ! ? understanding "
    "representation bidirectional language model character convolution "
    "highway projection memory"
).split()


def read_sentences(text, lines=256, min_tokens=3, max_tokens=64):
    """The first `lines` lines of `text` (`.gz` too) with at least
    `min_tokens` tokens, each cut at `max_tokens`."""
    opener = gzip.open if text.endswith(".gz") else open
    sentences = []
    with opener(text, "rt", encoding="utf-8") as f:
        for line in f:
            tokens = line.split()
            if len(tokens) >= min_tokens:
                sentences.append(tokens[:max_tokens])
                if len(sentences) == lines:
                    return sentences
    raise ValueError(
        f"Received a `text` file {text!r} with {len(sentences)} lines of "
        f">= {min_tokens} tokens, expected at least {lines}."
    )


def batches(workload, text=None, lines=256, batch=64):
    """The list of batches (lists of token lists) of one workload."""
    if workload == "uniform":
        rng = random.Random(0)
        return [[[rng.choice(WORDS) for _ in range(20)] for _ in range(64)]]
    if workload not in WORKLOADS:
        raise ValueError(
            f"Received an invalid `workload` {workload!r}, expected one of "
            f"{WORKLOADS}."
        )
    sentences = read_sentences(text, lines)
    if workload == "sorted":
        sentences = sorted(sentences, key=len, reverse=True)
    return [sentences[i : i + batch] for i in range(0, len(sentences), batch)]


def describe(groups):
    """Tokens, padded positions and the real fraction of a workload."""
    tokens = sum(len(s) for g in groups for s in g)
    padded = sum(len(g) * max(len(s) for s in g) for g in groups)
    return {
        "batches": len(groups),
        "sentences": sum(len(g) for g in groups),
        "tokens": tokens,
        "padded_positions": padded,
        "real_fraction": round(tokens / padded, 4),
    }


def dumps(result):
    """One JSON line that the side-by-side driver parses."""
    return "RESULT " + json.dumps(result)


def add_arguments(parser, variants):
    """The flags both sides of the side-by-side take: the workload
    (`--text --workloads --lines`), the timing (`--runs --threads`), the
    `--variants` (default `variants`) and the `--options`/`--weights`
    (default: the reference venv's `original` model)."""
    parser.add_argument("--text")
    parser.add_argument("--workloads", default="file,sorted,uniform")
    parser.add_argument("--lines", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variants", default=variants)
    parser.add_argument(
        "--options", default=os.path.join(WEIGHTS_DIR, "original_options.json")
    )
    parser.add_argument(
        "--weights", default=os.path.join(WEIGHTS_DIR, "original_weights.hdf5")
    )
