"""Builds a bilm-tf vocabulary file from a sentence-per-line corpus.

    keras-elmo vocab 'corpus/*.txt.gz' -o vocab.txt --min-count 3

Tokens are split on whitespace and ordered by descending count (ties by
token); the file starts with `<S>`, `</S>`, `<UNK>`. Blank lines and lines
that are not valid UTF-8 are skipped, as in training; the corpus is
checked first (its health printed to stderr; UTF-16, binary or mostly
non-UTF-8 files stop the command). Quote the glob so the shell does not
expand it (several patterns are also accepted).
"""

import os
import sys

from keras_elmo.cli._corpus_args import add_corpus_check_arguments
from keras_elmo.cli._corpus_args import check_corpus_from_args

HELP = "Count a corpus and write its vocabulary file."


def add_arguments(parser):
    parser.add_argument(
        "corpus",
        nargs="+",
        metavar="CORPUS_GLOB",
        help="Glob pattern(s) of sentence-per-line files (.gz read as gzip).",
    )
    parser.add_argument(
        "-o", "--output", required=True, help="Output vocabulary file."
    )
    parser.add_argument(
        "--min-count",
        type=int,
        default=2,
        help="Leave out tokens seen fewer times (default: 2, so that the "
        "words seen once train `<UNK>`, which held-out text needs).",
    )
    parser.add_argument(
        "--max-size",
        type=int,
        default=None,
        help="Keep at most this many tokens, the 3 specials included.",
    )
    parser.add_argument(
        "--force", action="store_true", help="Overwrite an existing output."
    )
    add_corpus_check_arguments(parser, oov=False)


def run(args):
    import logging

    from keras_elmo.data import corpus
    from keras_elmo.data.vocabulary import Vocabulary

    logger = logging.getLogger(__name__)
    if os.path.exists(args.output) and not args.force:
        raise FileExistsError(
            f"Output {args.output!r} exists; pass --force to overwrite it."
        )
    # Validate the size arguments before the (possibly long) counting pass,
    # under the names the user typed.
    from keras_elmo.utils import check_positive_int

    check_positive_int("--min-count", args.min_count)
    Vocabulary.from_counts({}, min_count=args.min_count, max_size=args.max_size)
    check_corpus_from_args(
        args, "CORPUS_GLOB", args.corpus, require_sentences=False
    )
    counts, stats = corpus.count_tokens(args.corpus)
    vocab = Vocabulary.from_counts(
        counts, min_count=args.min_count, max_size=args.max_size
    )
    covered = sum(counts[token] for token in vocab.tokens if token in counts)
    stats.oov_tokens = stats.tokens - covered
    logger.info("Corpus: %s", stats.summary())
    logger.info(
        "Vocabulary: %d of %d distinct tokens (min count %d, max size %s)",
        vocab.size,
        len(counts),
        args.min_count,
        args.max_size,
    )
    vocab.save(args.output)
    sys.stdout.write(
        f"Wrote {vocab.size} tokens to {args.output} ({len(counts)} distinct "
        f"in {stats.tokens} tokens, {stats.sentences} sentences, "
        f"{stats.files} files; {stats.oov_rate:.2%} of tokens OOV; "
        f"{stats.blank_lines} blank and {stats.malformed_lines} non-UTF-8 "
        "lines skipped)\n"
    )
    return 0
