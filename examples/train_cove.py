"""Trains the CoVe MT-LSTM English -> Spanish on Bible verse pairs.

    python examples/fetch_paper_data.py glove bible      # once
    nice python examples/train_cove.py --run-dir runs/cove --steps 20000
    # stopped? the same command resumes from the last checkpoint.

Data: `bible/kjv_rv1909.tsv` (King James Version -> Reina-Valera 1909,
31,084 verse pairs); a fixed, seeded 2% of the verses is held out as the
test set and 1% as dev (never trained on). English tokens are looked up
lower-cased in the frozen GloVe (words GloVe lacks share a zero row);
Spanish words seen at least `--min-count` times in training form the
target vocabulary (`<unk>` for the rest), with `<s>` and `</s>`.

Training: Adam (gradient norm clipped to 5) on the mean cross-entropy of
the Spanish tokens (teacher forcing), batches of similar-length verses
in a seeded order per epoch. Every `--checkpoint-every` steps the model,
optimizer and step go to a `tf.train.CheckpointManager` in `--run-dir`;
a new run restores the latest and continues with the same batches.

At the end: held-out perplexity (`exp` of the mean token cross-entropy,
`</s>` included) and corpus BLEU-4 of greedy translations (lower-cased
tokens, Papineni et al. 2002), written with provenance to
`--results`; the encoder is saved as `--run-dir/cove_encoder.keras`
(loads with `safe_mode=True`) for `[GloVe; CoVe]` task features and the
layer probe.
"""

import argparse
import collections
import math
import os
import time

import cove_model
import keras
import numpy as np
import paper_data
import tensorflow as tf
from fetch_paper_data import DEFAULT_OUT

from keras_elmo.utils.atomic import save_keras_atomically
from keras_elmo.utils.provenance import provenance
from keras_elmo.utils.provenance import write_json

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]


def read_pairs(path, max_tokens=60):
    """`[(english tokens, spanish tokens)]`, lower-cased, clipped."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3:
                raise ValueError(
                    f"{path}:{number}: expected `reference<TAB>english"
                    f"<TAB>spanish`, got {line!r}"
                )
            english, spanish = (
                [t.lower() for t in paper_data.tokenize(text)][:max_tokens]
                for text in fields[1:]
            )
            pairs.append((english, spanish))
    return pairs


def split_pairs(count, seed=0, test=0.02, dev=0.01):
    """Fixed `(train, dev, test)` index arrays of `count` verses."""
    order = np.random.default_rng(seed).permutation(count)
    n_test, n_dev = int(round(test * count)), int(round(dev * count))
    return (
        np.sort(order[n_test + n_dev :]),
        np.sort(order[n_test : n_test + n_dev]),
        np.sort(order[:n_test]),
    )


def corpus_bleu(hypotheses, references, max_n=4):
    """Corpus BLEU (one reference each): `BP * exp(mean_n log p_n)`.

    `p_n` = clipped n-gram matches / hypothesis n-grams over the corpus,
    `BP = min(1, exp(1 - r / c))` with `r`, `c` the total reference and
    hypothesis lengths. 0 when some `p_n` is 0.
    """
    matches, totals = [0] * max_n, [0] * max_n
    hyp_length = ref_length = 0
    for hyp, ref in zip(hypotheses, references):
        hyp_length, ref_length = hyp_length + len(hyp), ref_length + len(ref)
        for n in range(1, max_n + 1):
            hyp_grams = collections.Counter(
                tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1)
            )
            ref_grams = collections.Counter(
                tuple(ref[i : i + n]) for i in range(len(ref) - n + 1)
            )
            matches[n - 1] += sum((hyp_grams & ref_grams).values())
            totals[n - 1] += max(0, len(hyp) - n + 1)
    if min(matches) == 0 or hyp_length == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals))
    brevity = min(1.0, math.exp(1 - ref_length / hyp_length))
    return brevity * math.exp(log_precision / max_n)


class Data:
    """Ids of the verse pairs: GloVe rows (English), target vocabulary."""

    def __init__(self, pairs, train_index, glove_dir, min_count):
        english = {t for e, _ in pairs for t in e}
        words, vectors = paper_data.read_glove(glove_dir, keep=english)
        self.glove = np.concatenate([np.zeros((2, 50), np.float32), vectors])
        self.source_ids = {w: i + 2 for i, w in enumerate(words)}
        counts = collections.Counter(
            t for i in train_index for t in pairs[i][1]
        )
        kept = sorted(w for w, c in counts.items() if c >= min_count)
        self.target_words = SPECIALS + kept
        self.target_ids = {w: i for i, w in enumerate(self.target_words)}
        self.pairs = pairs

    def batch(self, index):
        """`({"words", "previous"}, targets)` of pairs `index`, padded."""
        sources = [
            [self.source_ids.get(t, 1) for t in self.pairs[i][0]] or [1]
            for i in index
        ]
        targets = [
            [self.target_ids.get(t, UNK) for t in self.pairs[i][1]] + [EOS]
            for i in index
        ]
        words = np.zeros((len(index), max(map(len, sources))), np.int32)
        target = np.zeros((len(index), max(map(len, targets))), np.int32)
        for row, (s, t) in enumerate(zip(sources, targets)):
            words[row, : len(s)], target[row, : len(t)] = s, t
        previous = np.concatenate(
            [np.full((len(index), 1), BOS, np.int32), target[:, :-1]], axis=1
        )
        previous[previous == EOS] = PAD
        return {"words": words, "previous": previous}, target


def epoch_batches(data, index, batch_size, epoch, seed):
    """The seeded batches of one epoch (the same on a resume)."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(index)
    lengths = np.array([len(data.pairs[i][1]) for i in order])
    chunk = 50 * batch_size
    order = np.concatenate(
        [
            order[i : i + chunk][np.argsort(lengths[i : i + chunk])]
            for i in range(0, len(order), chunk)
        ]
    )
    batches = [
        order[i : i + batch_size] for i in range(0, len(order), batch_size)
    ]
    return [batches[i] for i in rng.permutation(len(batches))]


def token_losses(translator, inputs, target):
    logits = translator(inputs, training=False)
    losses = keras.losses.sparse_categorical_crossentropy(
        target, logits, from_logits=True
    )
    weights = tf.cast(target > 0, losses.dtype)
    return float(tf.reduce_sum(losses * weights)), float(tf.reduce_sum(weights))


def perplexity(translator, data, index):
    total = count = 0.0
    for start in range(0, len(index), 64):
        loss, n = token_losses(
            translator, *data.batch(index[start : start + 64])
        )
        total, count = total + loss, count + n
    return math.exp(total / count)


def greedy_translate(encoder, decoder, data, index):
    """Greedy Spanish translations (token lists) of pairs `index`.

    Verses of equal source length decode together (no source padding),
    for at most `1.5 * source length + 5` tokens.
    """
    width = encoder.output[1].shape[-1]
    step_fn = tf.function(
        lambda top, previous: decoder({"top": top, "previous": previous}),
        input_signature=[
            tf.TensorSpec([None, None, width], tf.float32),
            tf.TensorSpec([None, None], tf.int32),
        ],
    )
    by_length = collections.defaultdict(list)
    for i in index:
        by_length[max(1, len(data.pairs[i][0]))].append(i)
    translations = {}
    for length, group in by_length.items():
        inputs, _ = data.batch(group)
        top = encoder(
            {
                "vectors": data.glove[inputs["words"]],
                "mask": inputs["words"] > 0,
            }
        )[1]
        previous = np.full((len(group), 1), BOS, np.int32)
        done = np.zeros(len(group), bool)
        for _ in range(int(1.5 * length) + 5):
            logits = step_fn(top, tf.constant(previous))
            step = np.argmax(logits[:, -1].numpy(), axis=-1).astype(np.int32)
            step[done] = PAD
            done |= step == EOS
            previous = np.concatenate([previous, step[:, None]], axis=1)
            if done.all():
                break
        for row, i in enumerate(group):
            ids = [int(t) for t in previous[row, 1:] if t not in (PAD, EOS)]
            translations[i] = [data.target_words[t] for t in ids]
    return [translations[i] for i in index]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data-dir", default=DEFAULT_OUT)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=60)
    parser.add_argument("--max-pairs", type=int, default=None)
    parser.add_argument("--checkpoint-every", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--results", default=None)
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    log = (lambda m: None) if args.quiet else (lambda m: print(m, flush=True))
    tf.get_logger().setLevel("ERROR")
    pairs = read_pairs(
        os.path.join(args.data_dir, "bible", "kjv_rv1909.tsv"), args.max_tokens
    )[: args.max_pairs]
    train, dev, test = split_pairs(len(pairs), args.seed)
    data = Data(
        pairs, train, os.path.join(args.data_dir, "glove"), args.min_count
    )
    keras.utils.set_random_seed(args.seed)
    encoder = cove_model.build_encoder(50, args.hidden)
    translator, decoder = cove_model.build_translator(
        data.glove, encoder, len(data.target_words), dim=args.hidden
    )
    optimizer = keras.optimizers.Adam(args.learning_rate, clipnorm=5.0)
    optimizer.build(translator.trainable_variables)
    step = tf.Variable(0, dtype=tf.int64, trainable=False)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=translator, optimizer=optimizer, step=step),
        os.path.join(args.run_dir, "checkpoints"),
        max_to_keep=2,
    )
    if manager.latest_checkpoint:
        manager.checkpoint.restore(manager.latest_checkpoint).expect_partial()
        log(f"resumed from {manager.latest_checkpoint} at step {int(step)}")

    @tf.function(reduce_retracing=True)
    def train_step(inputs, target):
        with tf.GradientTape() as tape:
            logits = translator(inputs, training=True)
            losses = keras.losses.sparse_categorical_crossentropy(
                target, logits, from_logits=True
            )
            weights = tf.cast(target > 0, losses.dtype)
            loss = tf.reduce_sum(losses * weights) / tf.reduce_sum(weights)
        variables = translator.trainable_variables
        optimizer.apply(tape.gradient(loss, variables), variables)
        return loss

    per_epoch = -(-len(train) // args.batch_size)
    start, losses = time.time(), []
    while int(step) < args.steps:
        epoch, offset = divmod(int(step), per_epoch)
        batches = epoch_batches(data, train, args.batch_size, epoch, args.seed)
        for index in batches[offset:]:
            losses.append(float(train_step(*data.batch(index))))
            step.assign_add(1)
            if (
                int(step) % args.checkpoint_every == 0
                or int(step) == args.steps
            ):
                manager.save(checkpoint_number=int(step))
                log(
                    f"step {int(step)}/{args.steps} train loss "
                    f"{np.mean(losses[-100:]):.3f} dev ppl "
                    f"{perplexity(translator, data, dev):.1f} "
                    f"({time.time() - start:.0f} s)"
                )
            if int(step) >= args.steps:
                break
    hypotheses = greedy_translate(encoder, decoder, data, test)
    references = [pairs[i][1] for i in test]
    results = {
        "pairs": {"train": len(train), "dev": len(dev), "test": len(test)},
        "steps": int(step),
        "target_vocabulary": len(data.target_words),
        "english_glove_coverage": float(
            np.mean([t in data.source_ids for i in test for t in pairs[i][0]])
        ),
        "dev_perplexity": perplexity(translator, data, dev),
        "test_perplexity": perplexity(translator, data, test),
        "test_bleu": corpus_bleu(hypotheses, references),
        "examples": [
            {
                "english": " ".join(pairs[i][0]),
                "reference": " ".join(pairs[i][1]),
                "greedy": " ".join(h),
            }
            for i, h in list(zip(test, hypotheses))[:5]
        ],
        "config": vars(args),
        "seconds_this_run": time.time() - start,
        "provenance": provenance(),
    }
    log(
        f"test perplexity {results['test_perplexity']:.1f}, BLEU "
        f"{100 * results['test_bleu']:.2f}"
    )
    save_keras_atomically(
        encoder, os.path.join(args.run_dir, "cove_encoder.keras")
    )
    if args.results:
        write_json(args.results, results)
    return results


if __name__ == "__main__":
    main()
