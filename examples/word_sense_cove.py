"""CoVe's layers for the WordNet word-sense evaluation (paper Table 5's
CoVe rows), next to the biLM's in `word_sense_wordnet.py`.

    python examples/word_sense_wordnet.py \\
        --cove-encoder examples/models/cove_encoder.keras

The committed encoder (`train_cove.py`) reads frozen GloVe vectors
(`python examples/fetch_paper_data.py glove`). Each distinct example
sentence runs through it once (sorted by length, in batches), and each
target word keeps three vectors: `cove_0` = its GloVe vector (zero for a
word GloVe lacks; zero-padded to the encoder's width, which changes no
cosine), `cove_1` = the first biLSTM layer and `cove_2` = the second,
what McCann et al. call CoVe (`cove_layer_probe.cove_layers`).
"""

import os

import numpy as np

# Method names in the results, one per CoVe layer (see the docstring).
METHODS = ("cove_0", "cove_1", "cove_2")


def default_glove_dir():
    """Where `fetch_paper_data.py glove` puts GloVe."""
    from fetch_paper_data import DEFAULT_OUT

    return os.path.join(DEFAULT_OUT, "glove")


def cove_targets(encoder_path, glove_dir, examples, chunk=512):
    """`{(tokens, position): float32 [3, 2H]}` for every example.

    Args:
        encoder_path: str, a `cove_encoder.keras` from `train_cove.py`.
        glove_dir: str, the fetched GloVe folder (`words.txt`,
            `vectors.npy`).
        examples: objects with `.tokens` (tuple of str) and `.position`.
        chunk: int, sentences handed to `cove_layers` at a time (it
            batches them by 64; the encoder's outputs for a sentence do
            not depend on the rest of its batch).
    """
    import keras
    import paper_data
    from cove_layer_probe import cove_layers
    from wordnet_senses import positions_by_sentence

    wanted = positions_by_sentence(examples)
    sentences = sorted(wanted, key=lambda s: (len(s), s))
    keep = {token.lower() for sentence in sentences for token in sentence}
    glove = paper_data.read_glove(glove_dir, keep=keep)
    encoder = keras.saving.load_model(encoder_path, safe_mode=True)
    vectors = {}
    for start in range(0, len(sentences), chunk):
        batch = sentences[start : start + chunk]
        flat = cove_layers(encoder, glove, [list(s) for s in batch])
        offset = 0
        for sentence in batch:
            for position in wanted[sentence]:
                vectors[(sentence, position)] = np.asarray(
                    flat[offset + position], np.float32
                )
            offset += len(sentence)
    return vectors


def cove_views(stack):
    """`{method: [N, 2H]}` from `[N, 3, 2H]`."""
    return {name: stack[:, j] for j, name in enumerate(METHODS)}
