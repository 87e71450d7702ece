"""UD CoNLL-U reading and the integer encodings of the POS examples.

`read_conllu(path)` returns `[(words, upos_tags), ...]`, one pair per
sentence: multiword-token ranges (`3-4`) and empty nodes (`5.1`) are
skipped, so the words are exactly the syntactic words UD tags.

`Vocabulary` maps strings to ids with `0 = padding` and `1 = <UNK>`.
"""

import collections
import gzip

import numpy as np

PAD_ID = 0
UNK_ID = 1
# The 17 universal POS tags of UD v1 (EWT 1.2 uses them), plus v2's CCONJ
# (v1's CONJ renamed), so v2 files read too.
UPOS_TAGS = (
    "ADJ ADP ADV AUX CONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM "
    "VERB X CCONJ"
).split()


def read_conllu(path, max_sentences=None):
    """Reads `(words, upos)` sentences from a (gzipped) CoNLL-U file."""
    opener = gzip.open if str(path).endswith(".gz") else open
    sentences, words, tags = [], [], []
    with opener(path, "rt", encoding="utf-8") as f:
        for line_number, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            if not line:
                if words:
                    sentences.append((words, tags))
                    words, tags = [], []
                    if max_sentences and len(sentences) >= max_sentences:
                        return sentences
                continue
            if line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 10:
                raise ValueError(
                    f"{path}:{line_number}: expected 10 tab-separated "
                    f"CoNLL-U fields, got {len(fields)}: {line!r}"
                )
            if "-" in fields[0] or "." in fields[0]:
                continue
            words.append(fields[1])
            tags.append(fields[3])
    if words:
        sentences.append((words, tags))
    return sentences


class Vocabulary:
    """String <-> id map; ids 0 (padding) and 1 (`<UNK>`) are reserved.

    Args:
        counts: a `collections.Counter` of items.
        min_count: int. Items seen fewer times map to `<UNK>`.
        unk: bool. Reserve id 1 for unknown items (tags use `False`).
    """

    def __init__(self, counts, min_count=1, unk=True):
        kept = sorted(
            (item for item, c in counts.items() if c >= min_count),
            key=lambda item: (-counts[item], item),
        )
        self.unk = unk
        self.items = ["<PAD>"] + (["<UNK>"] if unk else []) + kept
        self.index = {item: i for i, item in enumerate(self.items)}

    def __len__(self):
        return len(self.items)

    def id(self, item):
        if item in self.index:
            return self.index[item]
        if not self.unk:
            raise KeyError(f"{item!r} is not in the vocabulary.")
        return UNK_ID


def build_vocabularies(sentences, min_word_count=2, max_word_chars=20):
    """Word (lower-cased) and character vocabularies of `sentences`, and
    the fixed UPOS tag set (so a small subset still knows every tag)."""
    words, chars = collections.Counter(), collections.Counter()
    for tokens, upos in sentences:
        words.update(t.lower() for t in tokens)
        for token in tokens:
            chars.update(token[:max_word_chars])
    return (
        Vocabulary(words, min_count=min_word_count),
        Vocabulary(chars, min_count=1),
        Vocabulary(collections.Counter(UPOS_TAGS), unk=False),
    )


def encode(sentences, vocabs, max_word_chars=20):
    """Per-sentence int32 arrays: word ids [T], char ids [T, C], tags [T]."""
    word_vocab, char_vocab, tag_vocab = vocabs
    encoded = []
    for tokens, upos in sentences:
        word_ids = np.array(
            [word_vocab.id(t.lower()) for t in tokens], np.int32
        )
        char_ids = np.zeros((len(tokens), max_word_chars), np.int32)
        for i, token in enumerate(tokens):
            ids = [char_vocab.id(c) for c in token[:max_word_chars]]
            char_ids[i, : len(ids)] = ids
        tag_ids = np.array([tag_vocab.id(t) for t in upos], np.int32)
        encoded.append((word_ids, char_ids, tag_ids))
    return encoded


def subsample(num_sentences, fraction, seed):
    """Sorted indices of `round(fraction * n)` (at least 1) sentences."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(
            "Received an invalid value for argument `fraction`, expected "
            f"a float in (0, 1], got {fraction!r}."
        )
    count = max(1, int(round(fraction * num_sentences)))
    rng = np.random.default_rng(seed)
    return np.sort(rng.permutation(num_sentences)[:count])
