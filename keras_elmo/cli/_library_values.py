"""Library values the command line shows in its help, without importing
the library.

`keras-elmo --help` and every `keras-elmo COMMAND --help` build their
parsers without importing TensorFlow (the library's modules import it),
so the few library values a parser needs (choices, defaults) are copied
here; `tests/cli/help_without_tensorflow_test.py` checks that each copy
equals the library's value.
"""

# `keras_elmo.config.ARCHITECTURES`, sorted: `--random-weights` choices.
ARCHITECTURE_NAMES = ("medium", "original", "small", "tiny")

# The corpus-check thresholds, `keras_elmo.data.corpus_health`'s.
DEFAULT_MAX_INVALID_FRACTION = 0.5
DEFAULT_MAX_NUL_FRACTION = 0.1
DEFAULT_MAX_OOV_RATE = 0.5
