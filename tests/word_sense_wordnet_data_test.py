"""WordNet word-sense evaluation, its data: the WordNet parser, lemma
matching and the train/test split rules; offline (the `wordnet_mini`
fixture and synthetic senses).
"""

import os

import numpy as np
import pytest

from tests.conftest import load_example

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
