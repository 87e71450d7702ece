"""How long the corpus check (`keras_elmo.data.corpus_health`) adds before
`keras-elmo train`: megabytes and tokens per second of one scan.

    python benchmarks/corpus_check_speed.py [--copies 40] \\
        [--results benchmarks/results/corpus_check_speed.json]

Writes the shipped sample corpus (tests/data/en_pd_lm_sample.txt.gz,
3,000 lines of en_pd_lm) `--copies` times into one plain and one gzip
file, builds its vocabulary (min count 2), and times `check_corpus` with
that vocabulary and max_tokens 100 (the `train` defaults), best of
`--repeats`. Prints one row per file; `--results` writes them with their
provenance (JSON).
"""

import argparse
import gzip
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(REPO, "tests", "data", "en_pd_lm_sample.txt.gz")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--results", default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, REPO)
    from benchmarks.provenance import provenance
    from benchmarks.provenance import write_json
    from keras_elmo.data.corpus_health import check_corpus
    from keras_elmo.data.vocabulary import Vocabulary

    with gzip.open(SAMPLE, "rb") as f:
        text = f.read()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "corpus.txt")
        packed = os.path.join(tmp, "corpus.txt.gz")
        with open(plain, "wb") as f:
            for _ in range(args.copies):
                f.write(text)
        with gzip.open(packed, "wb") as f:
            for _ in range(args.copies):
                f.write(text)
        vocab = Vocabulary.build(SAMPLE, min_count=2)
        for path in (plain, packed):
            best = None
            for _ in range(args.repeats):
                start = time.perf_counter()
                report = check_corpus("--train", path, vocab, max_tokens=100)
                seconds = time.perf_counter() - start
                best = seconds if best is None else min(best, seconds)
            health = report.files[0]
            row = {
                "file": os.path.basename(path),
                "megabytes": round(health.bytes / 1e6, 3),
                "lines": health.lines,
                "tokens": health.tokens,
                "seconds": round(best, 3),
                "megabytes_per_second": round(health.bytes / 1e6 / best, 2),
                "tokens_per_second": round(health.tokens / best),
            }
            rows.append(row)
            print(
                f"{row['file']:16s} {row['megabytes']:8.1f} MB "
                f"{row['tokens']:>10d} tokens {row['seconds']:7.2f} s "
                f"{row['megabytes_per_second']:6.1f} MB/s "
                f"{row['tokens_per_second']:>9d} tokens/s"
            )
    if args.results:
        command = "python benchmarks/corpus_check_speed.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        write_json(
            args.results,
            {
                "provenance": provenance(command.strip()),
                "copies": args.copies,
                "repeats": args.repeats,
                "rows": rows,
            },
        )


if __name__ == "__main__":
    main()
