"""The `BiLM` layers that depend on its character format and word branch.

A bilm-tf config (UTF-8 bytes, no words) gets exactly the layers it always
had: no arguments are added and there is no word branch. A config with a
Unicode character lexicon (`BiLMConfig.char_lexicon`) gets its own
boundary tokens, table size and padding id; with a word lexicon, also the
word embedding branch (ELMoForManyLangs: `[word embedding; highway(char
CNN)]` is projected to `P`).
"""

import keras
from keras import ops

from keras_elmo.layers.sentence_boundaries import AddWordBoundaries
from keras_elmo.text import unicode_lexicon


def boundary_args(config):
    """`AddSentenceBoundaries` keyword arguments for `config`."""
    if not config.has_char_lexicon:
        return {}
    bos, eos = unicode_lexicon.boundary_char_ids(config.char_specials)
    return {"bos_ids": bos.tolist(), "eos_ids": eos.tolist()}


def char_cnn_args(config):
    """`CharCNNEmbedding` keyword arguments for `config`'s table."""
    if not config.has_char_lexicon:
        return {}
    return {
        "num_characters": config.char_table_rows,
        "pad_id": config.char_pad_id,
    }


def word_branch(config, dtype=None):
    """None, or `(Embedding, AddWordBoundaries, Concatenate)`."""
    if not config.has_word_branch:
        return None
    specials = unicode_lexicon.specials_dict(
        config.word_specials, unicode_lexicon.WORD_SPECIALS
    )
    return (
        keras.layers.Embedding(
            config.word_vocab_size,
            config.word_embedding_dim,
            dtype=dtype,
            name="word_embedding",
        ),
        AddWordBoundaries(
            specials["bos"],
            specials["eos"],
            specials["pad"],
            name="add_word_boundaries",
        ),
        keras.layers.Concatenate(axis=-1, dtype=dtype, name="token_features"),
    )


NEEDS_WORD_IDS = (
    "This biLM has a word embedding branch: it takes {'char_ids': "
    "[B, T, 50], 'word_ids': [B, T]}, made from string tokens by "
    "`bilm.encode_tokens(tokens)`; received char ids only."
)


def embed_tokens(bilm, inputs):
    """`BiLM.embed_tokens` for `{"char_ids"[, "word_ids"]}` inputs:
    `projection([word_embedding(w); highway(char_cnn(c))])`, or without
    words `projection(highway(char_cnn(c)))`."""
    if not isinstance(inputs, dict) or (
        bilm.word_embedding is not None and "word_ids" not in inputs
    ):
        raise TypeError(NEEDS_WORD_IDS)
    features = bilm.highway(bilm.char_cnn(inputs["char_ids"]))
    if bilm.word_embedding is not None:
        words = bilm.word_embedding(inputs["word_ids"])
        features = ops.concatenate([words, features], axis=-1)
    return bilm.token_projection(features)
