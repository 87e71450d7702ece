"""`keras-elmo embed` throughput on real sentences: sorted vs file order.

    python benchmarks/embed_throughput.py [--lines 10000]
        [--preset elmo_small_en] [--batch-size 64]
        [--modes sorted,unsorted,sorted+vocab] [--threads 2]

Input: the en_pd_lm corpus (`../shared/data/en_pd_lm` beside the
checkout): valid and test
first, then training lines until `--lines` lines. Runs the command's own
`embed_file` (the code behind `keras-elmo embed --top`) in this process
with the shipped preset, after a warm-up file, in each mode:

- `sorted`: the command as shipped: chunks of 16 batches sorted by length;
- `unsorted`: the same with batches in file order (the sort removed);
- `sorted+vocab`: sorted, with the token-embedding cache of the preset's
  `vocab.txt` (`--vocab`).

Prints, per mode, sentences/s and tokens/s (model load excluded) and the
padding waste: padded positions / all positions of the batches, as the
batches are formed (computed for both orders).
"""

import argparse
import gzip
import itertools
import os
import tempfile
import time

from real_text import EN_PD_LM

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
DATA = EN_PD_LM


def read_lines(count):
    lines = []
    for name in ("valid.txt.gz", "test.txt.gz", "train.txt.gz"):
        with gzip.open(os.path.join(DATA, name), "rt", encoding="utf-8") as f:
            lines += list(itertools.islice(f, count - len(lines)))
        if len(lines) >= count:
            break
    return [line.rstrip("\n") for line in lines]


def padding_waste(lengths, batch_size, sort_chunk):
    """Padded / total positions when `lengths` are batched in order, each
    chunk of `sort_chunk` lines sorted by length first (0 = no sort)."""
    padded = total = 0
    step = sort_chunk or len(lengths)
    for start in range(0, len(lengths), step):
        chunk = lengths[start : start + step]
        if sort_chunk:
            chunk = sorted(chunk)
        for b in range(0, len(chunk), batch_size):
            batch = chunk[b : b + batch_size]
            total += max(batch, default=0) * len(batch)
            padded += max(batch, default=0) * len(batch) - sum(batch)
    return padded / max(total, 1)


def unsorted_embed_chunk(engine):
    """`_embed_chunk` without the sort by length (for comparison only)."""
    return engine._embed_batches


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=10000)
    parser.add_argument("--preset", default="elmo_small_en")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--modes", default="sorted,unsorted,sorted+vocab")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    import keras_elmo
    from keras_elmo.embedding import hdf5_output as engine
    from keras_elmo.embedding.runners import BiLMEmbedder
    from keras_elmo.presets import preset_dir

    lines = read_lines(args.lines)
    lengths = [len(line.split()) for line in lines]
    chunk = args.batch_size * engine.CHUNK_BATCHES
    print(
        f"{len(lines)} lines, {sum(lengths)} tokens (mean "
        f"{sum(lengths) / len(lines):.1f}, max {max(lengths)}), batch "
        f"{args.batch_size}, threads {args.threads}, load "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        f"padding waste: sorted (chunks of {chunk} lines) "
        f"{padding_waste(lengths, args.batch_size, chunk):.1%}, file order "
        f"{padding_waste(lengths, args.batch_size, 0):.1%}"
    )
    bilm = keras_elmo.BiLM.from_preset(args.preset)
    vocab = os.path.join(preset_dir(args.preset), "vocab.txt")
    sorted_chunk = engine._embed_chunk
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.txt")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        warm = os.path.join(tmp, "warm.txt")
        with open(warm, "w", encoding="utf-8") as f:
            f.write("\n".join(lines[: args.batch_size]) + "\n")
        for mode in args.modes.split(","):
            start = time.perf_counter()
            embedder = BiLMEmbedder(
                bilm, vocabulary=vocab if "vocab" in mode else None
            )
            setup = time.perf_counter() - start
            engine._embed_chunk = (
                sorted_chunk
                if mode.startswith("sorted")
                else unsorted_embed_chunk(engine)
            )
            for path in (warm, src):
                load = os.getloadavg()[0]
                start = time.perf_counter()
                engine.embed_file(
                    embedder,
                    path,
                    os.path.join(tmp, "out.hdf5"),
                    layers="top",
                    batch_size=args.batch_size,
                    force=True,
                )
                seconds = time.perf_counter() - start
            print(
                f"{mode:>13}: {len(lines) / seconds:7.1f} sentences/s "
                f"{sum(lengths) / seconds:8.1f} tokens/s ({seconds:.1f} s; "
                f"embedder setup {setup:.1f} s; load {load:.1f} -> "
                f"{os.getloadavg()[0]:.1f})",
                flush=True,
            )
    engine._embed_chunk = sorted_chunk


if __name__ == "__main__":
    main()
