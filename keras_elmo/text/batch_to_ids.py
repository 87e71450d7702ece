"""`batch_to_ids`: tokenized sentences -> ELMo character ids (NumPy)."""

from collections.abc import Mapping
from collections.abc import Set

import numpy as np

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab


def token_to_char_ids(token):
    """Shifted character ids `[50]` int32 of one token (see `char_vocab`).

    The token is encoded as UTF-8 with invalid code points (lone
    surrogates) dropped, as AllenNLP's `token.encode("utf-8", "ignore")`;
    the first 48 bytes are kept. The literal tokens `<S>` and `</S>` map
    to the sentence boundary ids, as in AllenNLP and bilm-tf.
    """
    if token == char_vocab.BOS_TOKEN:
        return char_vocab.BOS_TOKEN_IDS.copy()
    if token == char_vocab.EOS_TOKEN:
        return char_vocab.EOS_TOKEN_IDS.copy()
    data = token.encode("utf-8", "ignore")[: char_vocab.MAX_TOKEN_BYTES]
    ids = np.full(
        [char_vocab.MAX_CHARS_PER_TOKEN], char_vocab.PAD_CHAR, dtype=np.int32
    )
    ids[0] = char_vocab.BOW_CHAR
    ids[1 : len(data) + 1] = np.frombuffer(data, dtype=np.uint8)
    ids[len(data) + 1] = char_vocab.EOW_CHAR
    return ids + char_vocab.ID_OFFSET


@keras_elmo_export("keras_elmo.batch_to_ids")
def batch_to_ids(sentences):
    """Converts tokenized sentences to ELMo character ids.

    Identical to AllenNLP's `allennlp.modules.elmo.batch_to_ids` (and to
    bilm-tf's `Batcher` followed by its +1 shift): each token becomes
    `[BOW, bytes[:48], EOW, PAD, ...] + 1`, 50 ids long; positions after a
    sentence's last token are all-zero rows. The literal tokens `<S>` and
    `</S>` get the sentence boundary ids, as in AllenNLP. One deliberate
    difference: the empty string `""` gives an all-zero row, so it reads as
    padding (as in the TF-Hub `tokens` signature); AllenNLP would encode it
    as a zero-byte word `[BOW, EOW, PAD, ...]`.

    Args:
        sentences: list of lists of str. The tokenized sentences (a dict
            or set is not a batch: its order is not the caller's).

    Returns:
        int32 array `[B, T, 50]`, `T` the longest sentence (0 for an empty
        batch or a batch of empty sentences).

    Example:

    >>> ids = keras_elmo.batch_to_ids([["Hello", "!"], ["Hi"]])
    >>> ids.shape
    (2, 2, 50)
    >>> ids[0, 0, :8].tolist()
    [259, 73, 102, 109, 109, 112, 260, 261]
    """
    if isinstance(sentences, (str, bytes, Mapping, Set)) or not hasattr(
        sentences, "__len__"
    ):
        raise TypeError(
            "`sentences` must be a list of lists of str tokens, "
            f"received {type(sentences).__name__}: {sentences!r:.80}"
        )
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes, Mapping, Set)) or not hasattr(
            sentence, "__len__"
        ):
            raise TypeError(
                f"`sentences[{i}]` must be a list of str tokens, received "
                f"{type(sentence).__name__}: {sentence!r:.80}"
            )
        for j, token in enumerate(sentence):
            if not isinstance(token, str):
                raise TypeError(
                    f"`sentences[{i}][{j}]` must be a str token, received "
                    f"{type(token).__name__}: {token!r:.80}"
                )
    max_len = max((len(s) for s in sentences), default=0)
    ids = np.zeros(
        [len(sentences), max_len, char_vocab.MAX_CHARS_PER_TOKEN],
        dtype=np.int32,
    )
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            if token:
                ids[i, j] = token_to_char_ids(token)
    return ids
