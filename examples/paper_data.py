"""Readers of the paper-comparison data (files of `fetch_paper_data.py`).

Every task example is a list of `(sentences, label)` pairs where
`sentences` is a tuple of token lists (one for a tagged sentence or a
snippet, two for an SNLI premise and hypothesis) and `label` an int (a
class) or an int array (one tag per token):

- POS: `(([w_1..w_n],), [t_1..t_n])`, UD English-EWT (`pos_data`).
- sentiment: `(([w_1..w_n],), 0 | 1)`, the snippets' fixed split.
- SNLI: `(([premise], [hypothesis]), entailment 0 | neutral 1 |
  contradiction 2)`; pairs without a gold label ("-") are skipped. The
  tokens are those of SNLI's own binary parses.
"""

import json
import os
import re

import numpy as np

SNLI_LABELS = ("entailment", "neutral", "contradiction")
# PTB-like: "don't" -> "do n't", "film's" -> "film 's", punctuation apart
# (the tokenisation GloVe's vocabulary was built with).
_TOKEN = re.compile(
    r"\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b|\w+(?:[-.]\w+)*|[^\w\s]"
)


def tokenize(text):
    """PTB-like tokens of `text` (see `_TOKEN`); `''` quotes become `"`."""
    return _TOKEN.findall(text.replace("''", '"').replace("``", '"'))


def read_sentiment(path, max_examples=None):
    """`[((tokens,), label)]` from a `label<TAB>rating<TAB>text` file."""
    examples = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3 or fields[0] not in ("0", "1"):
                raise ValueError(
                    f"{path}:{number}: expected `label<TAB>rating<TAB>text` "
                    f"with label 0 or 1, got {line!r}"
                )
            examples.append(((tokenize(fields[2]),), int(fields[0])))
            if max_examples and len(examples) >= max_examples:
                break
    return examples


def _parse_tokens(binary_parse):
    return [t for t in binary_parse.split() if t not in ("(", ")")]


def read_snli(path, max_examples=None, skip=0):
    """`[((premise, hypothesis), label)]` from an SNLI `.jsonl` file.

    Args:
        path: str, an SNLI 1.0 jsonl file.
        max_examples: int or None, stop after this many labelled pairs.
        skip: int, labelled pairs to pass over first (a dev set carved
            from the end of the training subset uses `skip`).
    """
    examples, seen = [], 0
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            record = json.loads(line)
            if "gold_label" not in record:
                raise ValueError(f"{path}:{number}: no `gold_label` field.")
            if record["gold_label"] not in SNLI_LABELS:
                continue
            seen += 1
            if seen <= skip:
                continue
            examples.append(
                (
                    (
                        _parse_tokens(record["sentence1_binary_parse"]),
                        _parse_tokens(record["sentence2_binary_parse"]),
                    ),
                    SNLI_LABELS.index(record["gold_label"]),
                )
            )
            if max_examples and len(examples) >= max_examples:
                break
    return examples


def read_pos(path, max_examples=None):
    """`[((words,), tag ids)]` from a UD CoNLL-U file (17 UPOS tags)."""
    import pos_data

    tags = {tag: i for i, tag in enumerate(pos_data.UPOS_TAGS)}
    return [
        ((words,), np.array([tags[t] for t in upos], np.int32))
        for words, upos in pos_data.read_conllu(path, max_examples)
    ]


def read_glove(glove_dir, keep=None):
    """`(words, vectors)` of GloVe (`fetch_paper_data.py glove`).

    Args:
        glove_dir: str, the folder with `words.txt` and `vectors.npy`.
        keep: optional set of lower-cased words; only their rows are
            returned (the task vocabularies are small, GloVe has 400k).

    Returns:
        `(list of str, float32 [N, dim])`, in GloVe's row order.
    """
    words_path = os.path.join(glove_dir, "words.txt")
    vectors_path = os.path.join(glove_dir, "vectors.npy")
    for path in (words_path, vectors_path):
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"No GloVe file {path}: run `python "
                "examples/fetch_paper_data.py glove` (or pass --glove-dir)."
            )
    with open(words_path, encoding="utf-8") as f:
        words = f.read().split("\n")[:-1]
    vectors = np.load(vectors_path, mmap_mode="r", allow_pickle=False)
    if vectors.shape[0] != len(words):
        raise ValueError(
            f"{glove_dir}: {len(words)} words but {vectors.shape[0]} vectors."
        )
    rows = [i for i, w in enumerate(words) if keep is None or w in keep]
    return [words[i] for i in rows], np.asarray(vectors[rows], np.float32)
