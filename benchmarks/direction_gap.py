"""Where the forward and backward LMs of a biLM differ: per-word losses.

    python benchmarks/direction_gap.py
        [--model keras_elmo/presets/elmo_small_en]
        [--data shared/data/en_pd_lm/test.txt.gz] [--top 15]

For a sentence `w_1..w_n` the forward LM predicts `w_1..w_n, </S>` and the
backward LM `<S>, w_1..w_n` (as `keras-elmo evaluate` scores them), so
every word `w_k` gets one cross-entropy from each direction:
`CE_fwd(w_k) = -log p(w_k | <S>, w_1..w_{k-1})` and
`CE_bwd(w_k) = -log p(w_k | w_{k+1}..w_n, </S>)`. A perfect model gives
both directions the same total, `-log p(w_1..w_n)`, by the chain rule.
The script splits the measured gap `sum CE_fwd - sum CE_bwd` into the
first word, the last word, the words between, `<UNK>` and the two
boundary predictions (`</S>` forward, `<S>` backward), and lists the
words that contribute the most. Prints a table and then one JSON line.
"""

import argparse
import collections
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ("first word", "inner word", "last word", "unk", "boundary")


def word_kinds(forward_targets, eos_id, unk_id):
    """Kind of each forward prediction, `[B, T]` ints indexing `KINDS`.

    `-1` at padding. Forward position `j` predicts `w_{j+1}` (or `</S>`
    at `j = n`, the last real position of the row).
    """
    real = forward_targets >= 0
    n = real.sum(axis=1, keepdims=True) - 1  # words per row
    j = np.arange(forward_targets.shape[1])[None, :]  # [1, T]
    kinds = np.full(forward_targets.shape, KINDS.index("inner word"))
    kinds[:, 0] = KINDS.index("first word")
    kinds[j == n - 1] = KINDS.index("last word")
    kinds[forward_targets == unk_id] = KINDS.index("unk")
    kinds[forward_targets == eos_id] = KINDS.index("boundary")
    return np.where(real, kinds, -1)


def aligned_losses(backward_ce, boundary):
    """The backward loss of the token each forward position predicts, `[B, T]`.

    The word the forward LM predicts at position `j` is the one the
    backward LM predicts at `j + 1`; the forward `</S>` (where `boundary`,
    `[B, T]` bool, is set) is paired with the backward `<S>` (at 0), the
    other boundary prediction.
    """
    aligned = np.zeros_like(backward_ce)
    aligned[:, :-1] = backward_ce[:, 1:]
    rows, cols = np.nonzero(boundary)
    aligned[rows, cols] = backward_ce[rows, 0]
    return aligned


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--model",
        default=os.path.join(
            HERE, "..", "keras_elmo", "presets", "elmo_small_en"
        ),
        help="A trained model directory (options, weights, softmax, vocab).",
    )
    parser.add_argument(
        "--data",
        default=os.path.join(
            HERE, "..", "..", "shared", "data", "en_pd_lm", "test.txt.gz"
        ),
    )
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--max-tokens", type=int, default=100)
    parser.add_argument(
        "--results",
        default=os.path.join(HERE, "results", "direction_gap.json"),
        help="JSON results file (with provenance) the model card quotes.",
    )
    args = parser.parse_args(argv)

    import tensorflow as tf

    from keras_elmo.data.lm_dataset import make_lm_dataset
    from keras_elmo.models.loading import load_language_model
    from keras_elmo.training.fused_loss import full_softmax_losses

    model, vocabulary = load_language_model(args.model)
    dataset = make_lm_dataset(
        args.data,
        vocabulary,
        global_batch_size=64,
        max_tokens=args.max_tokens,
        shuffle=False,
    )

    @tf.function(reduce_retracing=True)
    def cross_entropies(char_ids, targets):
        hidden = model(char_ids, training=False)
        return [
            full_softmax_losses(model.softmax, hidden[d], targets[d])
            for d in ("forward", "backward")
        ]

    sums = np.zeros((len(KINDS), 2))
    counts = np.zeros(len(KINDS), np.int64)
    word_gap = collections.Counter()
    word_count = collections.Counter()
    for features, targets in dataset:
        forward_targets = targets["forward"].numpy()
        real = forward_targets >= 0  # the same tokens in both directions
        forward_ce, backward_ce = np.zeros(real.shape), np.zeros(real.shape)
        losses = cross_entropies(features["char_ids"], targets)
        forward_ce[real], backward_ce[real] = (x.numpy() for x in losses)
        kinds = word_kinds(
            forward_targets, vocabulary.eos_id, vocabulary.unk_id
        )
        boundary = kinds == KINDS.index("boundary")
        backward_aligned = aligned_losses(backward_ce, boundary)
        for k in range(len(KINDS)):
            mask = kinds == k
            sums[k] += forward_ce[mask].sum(), backward_aligned[mask].sum()
            counts[k] += mask.sum()
        words = kinds >= 0
        gaps = (forward_ce - backward_aligned)[words]
        for token_id, gap in zip(forward_targets[words], gaps):
            word_gap[int(token_id)] += float(gap)
            word_count[int(token_id)] += 1

    total = sums.sum(axis=0)
    n = counts.sum()
    gap = total[0] - total[1]
    print(
        f"{n} predictions per direction; perplexity forward "
        f"{np.exp(total[0] / n):.1f}, backward {np.exp(total[1] / n):.1f}"
    )
    header = ("kind", "n", "fwd CE", "bwd CE", "share of gap")
    print("{:12s} {:>7s} {:>7s} {:>7s} {:>12s}".format(*header))
    rows = {}
    for k, kind in enumerate(KINDS):
        mean = sums[k] / max(counts[k], 1)
        share = (sums[k, 0] - sums[k, 1]) / gap if gap else 0.0
        rows[kind] = {
            "n": int(counts[k]),
            "forward_ce": float(mean[0]),
            "backward_ce": float(mean[1]),
            "share_of_gap": float(share),
        }
        row = (kind, counts[k], mean[0], mean[1], share)
        print("{:12s} {:7d} {:7.3f} {:7.3f} {:12.1%}".format(*row))
    top = [w for w, _ in word_gap.most_common(args.top)]
    print(
        "words adding most to the gap (nats forward - backward, occurrences):"
    )
    for token_id in top:
        token = vocabulary.id_to_token(token_id)
        row = (repr(token), word_gap[token_id], word_count[token_id])
        print("  {:15s} {:8.0f} {:6d}".format(*row))
    result = {
        "model": os.path.relpath(args.model),
        "data": os.path.relpath(args.data),
        "predictions": int(n),
        "forward_perplexity": float(np.exp(total[0] / n)),
        "backward_perplexity": float(np.exp(total[1] / n)),
        "kinds": rows,
        "top_words": {vocabulary.id_to_token(w): word_gap[w] for w in top},
    }
    print(json.dumps(result))
    from provenance import provenance
    from provenance import write_json

    write_json(args.results, {"provenance": provenance(), **result})


if __name__ == "__main__":
    main()
