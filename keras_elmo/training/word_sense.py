"""Word-sense nearest neighbours, in the spirit of Peters et al. Table 4.

A context-free embedding gives a word one vector whatever the sentence; a
biLM gives it a vector per sentence. For each occurrence of an ambiguous
word we find the most similar *other* occurrence of the same word
(cosine similarity of the biLM vectors at that position, over a small
pool of sentences whose sense of the word is labelled) and check whether
it has the same sense. With a context-free layer every occurrence is
identical, so the nearest neighbour carries no sense information at all.
"""

import numpy as np

from keras_elmo.text.char_vocab import batch_to_ids

# (word, sense, whitespace-tokenized sentence). Plain English of the kind
# the shipped model was trained on (19th-century prose, speeches, bible).
SENSE_POOL = [
    ("bank", "river", "She sat on the bank of the river and watched ."),
    ("bank", "river", "The boat was drawn up on the bank of the stream ."),
    ("bank", "river", "Reeds grew thick along the bank of the water ."),
    ("bank", "river", "They walked down the steep bank to the river ."),
    ("bank", "money", "He deposited the money in the bank ."),
    ("bank", "money", "The bank lent the merchants money at interest ."),
    ("bank", "money", "Congress debated the charter of the national bank ."),
    ("bank", "money", "The notes of the bank were paid in gold ."),
    ("play", "drama", "We saw a new play at the theatre last night ."),
    ("play", "drama", "The actors rehearsed the play for the evening ."),
    ("play", "drama", "She read the first act of the play aloud ."),
    ("play", "drama", "The play was performed before a large audience ."),
    ("play", "game", "The boys were at play in the fields ."),
    ("play", "game", "Their play in the garden was noisy and merry ."),
    ("play", "game", "The children left their play and came in ."),
    ("play", "game", "All work and no play makes a dull boy ."),
]


def cosine_matrix(vectors):
    """Pairwise cosine similarities of the rows of `vectors` `[N, D]`."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True) + 1e-12
    unit = vectors / norms
    return unit @ unit.T


def nearest_same_word(vectors, words):
    """Index of each row's most similar other row with the same word.

    Args:
        vectors: float `[N, D]`, one vector per occurrence.
        words: N strings; neighbours are searched among equal words only.

    Returns:
        int array `[N]`.
    """
    similarity = cosine_matrix(np.asarray(vectors, dtype=np.float64))
    words = np.asarray(words)
    allowed = words[:, None] == words[None, :]
    np.fill_diagonal(allowed, False)
    return np.argmax(np.where(allowed, similarity, -np.inf), axis=-1)


def occurrence_vectors(bilm, pool=SENSE_POOL):
    """Returns `{layer_name: [N, 2P]}` at each pool sentence's target word.

    Layer names: `word_emb` (context-free) and `lstm_outputs1..L`.
    """
    sentences = [sentence.split() for _, _, sentence in pool]
    positions = [s.index(word) for (word, _, _), s in zip(pool, sentences)]
    outputs = bilm(batch_to_ids(sentences))
    rows = np.arange(len(pool))
    return {
        name: np.asarray(value)[rows, positions]
        for name, value in outputs.items()
        if name != "mask"
    }


def sense_agreement(bilm, pool=SENSE_POOL):
    """Per layer: fraction of occurrences whose nearest neighbour shares
    their sense, and the neighbour indices.

    Returns:
        dict layer name -> `(agreement, nearest)`.
    """
    words = [word for word, _, _ in pool]
    senses = np.array([sense for _, sense, _ in pool])
    results = {}
    for name, vectors in occurrence_vectors(bilm, pool).items():
        nearest = nearest_same_word(vectors, words)
        results[name] = (float(np.mean(senses == senses[nearest])), nearest)
    return results


def chance_agreement(pool=SENSE_POOL):
    """Expected agreement of a neighbour drawn at random among the other
    occurrences of the same word."""
    words = np.array([word for word, _, _ in pool])
    senses = np.array([sense for _, sense, _ in pool])
    same_word = words[:, None] == words[None, :]
    np.fill_diagonal(same_word, False)
    same_sense = same_word & (senses[:, None] == senses[None, :])
    return float(np.mean(same_sense.sum(-1) / same_word.sum(-1)))


def write_report(bilm, out, pool=SENSE_POOL):
    """Writes the nearest-neighbour table and agreement per layer."""
    results = sense_agreement(bilm, pool)
    top = f"lstm_outputs{bilm.config.num_layers}"
    _, nearest = results[top]
    out.write(
        "\nWord senses (paper Table 4): for each sentence, the other "
        "sentence whose\nvector for the same word is closest (top biLM "
        "layer, cosine):\n"
    )
    for i, (word, sense, sentence) in enumerate(pool):
        n_word, n_sense, n_sentence = pool[nearest[i]]
        mark = "same sense" if n_sense == sense else "OTHER sense"
        out.write(f"  [{word}/{sense}] {sentence}\n")
        out.write(f"      -> [{n_sense}] {n_sentence}  ({mark})\n")
    out.write(
        "Nearest neighbour has the same sense (a random neighbour would: "
        f"{chance_agreement(pool):.0%}):\n"
    )
    for name, (agreement, _) in results.items():
        if name == "word_emb":
            out.write(
                f"  {name:>14}: no information (context-free: every "
                "occurrence of a word has the same vector)\n"
            )
        else:
            out.write(f"  {name:>14}: {agreement:.0%}\n")
    return results
