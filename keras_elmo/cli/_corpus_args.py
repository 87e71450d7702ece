"""The corpus-check flags shared by `train`, `vocab`, `evaluate`, `embed`,
and the call that runs the check and prints its summary to stderr.

The checks and their thresholds are `keras_elmo.data.corpus_health`'s.
"""

import sys

from keras_elmo.cli import _library_values as defaults

_FLAGS = (
    (
        "--max-invalid-fraction",
        defaults.DEFAULT_MAX_INVALID_FRACTION,
        "Stop when more than this fraction of a file's non-blank lines are "
        "not valid UTF-8 (default: %(default)s, most lines; 1 = never).",
    ),
    (
        "--max-nul-fraction",
        defaults.DEFAULT_MAX_NUL_FRACTION,
        "Stop when more than this fraction of a file's bytes are NUL "
        "(binary data; default: %(default)s; 1 = never).",
    ),
    (
        "--max-oov-rate",
        defaults.DEFAULT_MAX_OOV_RATE,
        "Stop when more than this fraction of a file's tokens are not in "
        "the vocabulary (it belongs to another corpus; default: "
        "%(default)s; 1 = never).",
    ),
)


def add_corpus_check_arguments(parser, oov=True):
    """Adds the threshold flags (`--max-oov-rate` only if `oov`) and
    `--skip-corpus-check`."""
    group = parser.add_argument_group(
        "corpus check",
        "Before reading a corpus, every file is scanned: lines read, "
        "skipped (blank, not UTF-8), over-long and split, tokens, OOV rate. "
        "A UTF-16/32 file, binary data or a foreign vocabulary stops the "
        "command with an error naming the file.",
    )
    for flag, default, text in _FLAGS:
        if flag == "--max-oov-rate" and not oov:
            continue
        group.add_argument(flag, type=float, default=default, help=text)
    group.add_argument(
        "--skip-corpus-check",
        action="store_true",
        help="Do not scan the corpus first (a huge corpus you have checked).",
    )


def limits_from_args(args):
    from keras_elmo.data import corpus_health

    return corpus_health.HealthLimits(
        max_invalid_fraction=args.max_invalid_fraction,
        max_nul_fraction=args.max_nul_fraction,
        max_oov_rate=getattr(
            args, "max_oov_rate", defaults.DEFAULT_MAX_OOV_RATE
        ),
    )


def check_corpus_from_args(
    args,
    name,
    file_pattern,
    vocabulary=None,
    max_tokens=None,
    require_sentences=True,
    stream=None,
):
    """Runs `corpus_health.check_corpus` with the flags' thresholds and
    writes its summary to `stream` (stderr). Returns the `CorpusHealth`,
    or None with `--skip-corpus-check` or no `file_pattern`."""
    from keras_elmo.data import corpus_health

    if file_pattern is None or getattr(args, "skip_corpus_check", False):
        return None
    report = corpus_health.check_corpus(
        name,
        file_pattern,
        vocabulary=vocabulary,
        max_tokens=max_tokens,
        limits=limits_from_args(args),
        require_sentences=require_sentences,
    )
    stream = stream or sys.stderr
    for line in report.summary_lines():
        stream.write(line + "\n")
    return report
