"""A sense-labelled data set from the example sentences of WordNet 3.0.

Each WordNet synset has a gloss, and many glosses end in example
sentences in double quotes:

    00001740 29 v 04 breathe 0 take_a_breath 0 respire 0 ... | draw air
    into, and expel out of, the lungs; "I can breathe better when the air
    is clean"; "The patient is respiring"

An example in which a form of one of the synset's single-word lemmas
occurs is a sense-labelled occurrence of that lemma: (lemma, part of
speech, sense = synset, tokens, target position). Above: `breathe`
at token 2 of the first example, `respire` (as "respiring") at token 3
of the second.

* Tokens: the regular expression that tokenized the shipped model's
  training corpus (`shared/data/scripts/build_en_lm_corpus.py`): words
  keep inner hyphens and apostrophes, `n't` and `'s`-type clitics and
  punctuation are split off.
* Lemma matching (WordNet's own `morphy`, in reverse): a token matches
  lemma `L` of part of speech `p` when, lower-cased and with a final
  `'s` removed, it equals `L`, or `p`'s exception list
  (`noun.exc`, `verb.exc`, ...) maps it to `L` (`ran -> run`,
  `abetted -> abet`), or one of morphy's suffix rules for `p` turns it
  into `L` (nouns `-s, -ses, -xes, -zes, -ches, -shes, -men, -ies`;
  verbs `-s, -ies, -es, -ed, -ing`; adjectives `-er, -est`). The first
  matching token is the target. Multi-word lemmas (`take_a_breath`)
  are left out.
* Duplicates: the same (lemma, part of speech, token sequence) under
  two synsets is dropped (its label is ambiguous); exact repeats are
  kept once.
* Kept: senses with at least `min_examples` examples (2 for the main
  evaluation: each is then in train and in test; 1 keeps every sense),
  and lemmas with at least two such senses.
* Split, per lemma, with a generator seeded by (seed, lemma, part of
  speech): each sense's examples are shuffled; a sense with `n >= 2`
  examples puts `max(1, floor(test_fraction * n))` in test and the rest
  (at least one) in train; the lemma's one-example senses, shuffled,
  alternate train, test, train, ... So every lemma has training
  examples, but a one-example sense that lands in test has none: no
  method can predict it, and it counts as an error for all of them.
"""

import collections
import dataclasses
import hashlib
import os
import re

import numpy as np

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}

# build_en_lm_corpus.py's tokenizer, which made the shipped model's data.
TOKEN = re.compile(
    r"(?:[A-Za-z]\.){2,}|\d+(?:[.,]\d+)*|n't|'(?:s|re|ve|ll|d|m)\b"
    r"|[^\W\d_]+(?=n't)|[^\W\d_]+(?:[-'][^\W\d_]+)*|\.\.\.|--|[^\s\w]",
    re.U,
)

# WordNet's morphy detachment rules (wnintro(7WN) "morphy"):
# (suffix, ending) pairs, tried on the inflected form.
SUFFIX_RULES = {
    "n": [
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ],
    "v": [
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}

_QUOTED = re.compile(r'"([^"]*)"')
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")


@dataclasses.dataclass(frozen=True)
class Synset:
    """One line of a `data.{noun,verb,adj,adv}` file."""

    offset: str  # 8-digit byte offset: with `pos`, the synset's id
    pos: str  # n, v, a, r (adjective satellites `s` count as `a`)
    lemmas: tuple  # lower-cased, adjective markers removed
    examples: tuple  # the double-quoted sentences of the gloss


@dataclasses.dataclass(frozen=True)
class Example:
    """One sense-labelled occurrence of a lemma."""

    lemma: str
    pos: str
    sense: str  # the synset offset
    tokens: tuple
    position: int  # index of the target token in `tokens`


def tokenize(text):
    """`text` -> list of tokens (the shipped model's tokenizer)."""
    return TOKEN.findall(text)


def parse_data_line(line, pos):
    """A `Synset` from one `data.*` line; None for the licence header.

    Line format (wndb(5WN)): `offset lex_filenum ss_type w_cnt
    [word lex_id]... p_cnt [pointer]... [frames] | gloss`, `w_cnt` in
    hexadecimal.
    """
    if line.startswith("  ") or not line.strip():
        return None
    head, _, gloss = line.partition(" | ")
    fields = head.split()
    try:
        count = int(fields[3], 16)
        words = fields[4 : 4 + 2 * count : 2]
    except (IndexError, ValueError) as error:
        raise ValueError(
            f"Expected a WordNet data line `offset lex_filenum ss_type "
            f"w_cnt word lex_id ...`, received {line[:80]!r}."
        ) from error
    if len(words) != count:
        raise ValueError(f"Truncated WordNet data line {line[:80]!r}.")
    lemmas = tuple(_ADJ_MARKER.sub("", w).lower() for w in words)
    examples = tuple(e.strip() for e in _QUOTED.findall(gloss) if e.strip())
    return Synset(fields[0], pos, lemmas, examples)


def read_synsets(dict_dir, pos):
    """All synsets of `data.{noun,verb,adj,adv}` for `pos` in n/v/a/r."""
    path = os.path.join(dict_dir, f"data.{POS_FILES[pos]}")
    with open(path, encoding="utf-8") as f:
        return [s for s in (parse_data_line(x, pos) for x in f) if s]


def read_exceptions(dict_dir, pos):
    """`{inflected: [base, ...]}` from `{noun,verb,adj,adv}.exc`."""
    table = collections.defaultdict(list)
    path = os.path.join(dict_dir, f"{POS_FILES[pos]}.exc")
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 2:
                table[fields[0].lower()].extend(fields[1:])
    return dict(table)


def read_sense_ranks(dict_dir, pos):
    """`{(lemma, offset): rank}` from `index.*`: WordNet's sense number,
    1 for the most frequent sense in WordNet's tagged corpora."""
    ranks = {}
    path = os.path.join(dict_dir, f"index.{POS_FILES[pos]}")
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("  ") or not line.strip():
                continue
            fields = line.split()
            synset_count = int(fields[2])
            offsets = fields[len(fields) - synset_count :]
            for rank, offset in enumerate(offsets, start=1):
                ranks[(fields[0].lower(), offset)] = rank
    return ranks


def base_forms(token, pos, exceptions):
    """The set of lemmas `token` can be a form of (see module docstring)."""
    word = token.lower()
    if word.endswith("'s"):
        word = word[:-2]
    forms = {word}
    forms.update(exceptions.get(word, ()))
    for suffix, ending in SUFFIX_RULES[pos]:
        if word.endswith(suffix) and len(word) > len(suffix):
            forms.add(word[: -len(suffix)] + ending)
    return forms


def find_lemma(tokens, lemma, pos, exceptions):
    """Index of the first token that is a form of `lemma`, else None."""
    for i, token in enumerate(tokens):
        if lemma in base_forms(token, pos, exceptions):
            return i
    return None


def synset_examples(synsets, exceptions):
    """`Example`s of every single-word lemma found in its synset's example
    sentences, deduplicated (see module docstring)."""
    labels = collections.defaultdict(set)
    found = {}
    for synset in synsets:
        for text in synset.examples:
            tokens = tuple(tokenize(text))
            for lemma in synset.lemmas:
                if "_" in lemma:
                    continue
                i = find_lemma(tokens, lemma, synset.pos, exceptions)
                if i is None:
                    continue
                key = (lemma, synset.pos, tokens)
                labels[key].add(synset.offset)
                found.setdefault((key, synset.offset), i)
    return [
        Example(key[0], key[1], sense, key[2], position)
        for (key, sense), position in found.items()
        if len(labels[key]) == 1
    ]


def positions_by_sentence(examples):
    """`{tokens: {position, ...}}`: the target positions of each distinct
    example sentence, so that each sentence is embedded once."""
    wanted = collections.defaultdict(set)
    for example in examples:
        wanted[example.tokens].add(example.position)
    return wanted


def load_examples(dict_dir, parts_of_speech="nvar"):
    """`(examples, ranks)`: the `Example`s of all four parts of speech and
    `{(lemma, pos, offset): WordNet sense number}`."""
    examples, ranks = [], {}
    for pos in parts_of_speech:
        exceptions = read_exceptions(dict_dir, pos)
        examples += synset_examples(read_synsets(dict_dir, pos), exceptions)
        for (lemma, offset), rank in read_sense_ranks(dict_dir, pos).items():
            ranks[(lemma, pos, offset)] = rank
    return examples, ranks


def group_by_lemma(examples, min_examples=1, min_senses=2):
    """`{(lemma, pos): {sense: [Example, ...]}}`, in a canonical (sorted)
    order, of the senses with at least `min_examples` examples, for the
    lemmas with at least `min_senses` such senses."""
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for example in examples:
        groups[(example.lemma, example.pos)][example.sense].append(example)
    kept = {}
    for key in sorted(groups):
        senses = {
            sense: sorted(items, key=_order)
            for sense, items in sorted(groups[key].items())
            if len(items) >= min_examples
        }
        if len(senses) >= min_senses:
            kept[key] = senses
    return kept


def _order(example):
    return (example.tokens, example.position)


def lemma_rng(seed, lemma, pos):
    """The split's generator for one lemma: independent of which other
    lemmas exist or of their order."""
    digest = hashlib.sha256(f"{lemma}\t{pos}".encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


def split_lemma(senses, rng, test_fraction=0.5):
    """Splits one lemma's `{sense: [Example]}` (see module docstring).

    Returns:
        `(train, test)` lists of `Example`.
    """
    if not 0.0 < test_fraction <= 0.5:
        raise ValueError(
            f"Expected `test_fraction` in (0, 0.5], received {test_fraction!r}."
        )
    train, test, singles = [], [], []
    for sense in sorted(senses):
        items = [senses[sense][i] for i in rng.permutation(len(senses[sense]))]
        if len(items) == 1:
            singles.append(items[0])
            continue
        n_test = max(1, int(np.floor(test_fraction * len(items))))
        test += items[:n_test]
        train += items[n_test:]
    for k, i in enumerate(rng.permutation(len(singles))):
        (train if k % 2 == 0 else test).append(singles[i])
    return train, test


def split_examples(groups, seed=0, test_fraction=0.5):
    """`(train, test)` over all lemmas of `group_by_lemma`'s output."""
    train, test = [], []
    for (lemma, pos), senses in groups.items():
        tr, te = split_lemma(senses, lemma_rng(seed, lemma, pos), test_fraction)
        train += tr
        test += te
    return train, test
