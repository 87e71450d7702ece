"""The awkward text inputs the API tables share, and the NumPy
re-derivation of their char ids (what `batch_to_ids` must return).
"""

import numpy as np

LONG_SENTENCE = [f"w{i % 97}" for i in range(10_000)]
LONG_TOKEN = "é" * 500  # 1,000 UTF-8 bytes
MIXED = ["héllo", "世界", "🎉", "مرحبا", "Привет", "👩‍👩‍👧", "ǅ", "a\u0301"]
BAD_UTF8 = [b"\xff\xfe", b"ok", b"\xc3", b"\xed\xa0\x80"]
NUL = ["a\x00b", "\x00"]


def reference_row(token):
    """NumPy re-derivation of one token's 50 shifted ids from its bytes.

    `""` is padding (zeros); a str whose bytes are all dropped (lone
    surrogates) is a zero-byte word `[BOW, EOW]`, as in AllenNLP."""
    if isinstance(token, str):
        if not token:
            return np.zeros(50, np.int32)
        if token in ("<S>", "</S>"):
            char = 256 if token == "<S>" else 257
            return np.array([259, char + 1, 260] + [261] * 47, np.int32)
        token = token.encode("utf-8", "ignore")
    elif not token:
        return np.zeros(50, np.int32)
    row = [259] + [b + 1 for b in token[:48]] + [260]
    return np.array(row + [261] * (50 - len(row)), np.int32)


def reference_ids(sentences):
    steps = max((len(s) for s in sentences), default=0)
    ids = np.zeros([len(sentences), steps, 50], np.int32)
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            ids[i, j] = reference_row(token)
    return ids
