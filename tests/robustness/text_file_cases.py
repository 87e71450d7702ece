"""File cases of the text files: options.json and the vocabulary. Each
bad file raises an error naming the file, the key or line, and what
was wrong.
"""

from keras_elmo.data.vocabulary import Vocabulary
from tests.robustness.case_table import VOCAB
from tests.robustness.case_table import error
from tests.robustness.case_table import ok
from tests.robustness.case_table import ref
from tests.robustness.file_case_helpers import RANDOM
from tests.robustness.file_case_helpers import edited_options
from tests.robustness.file_case_helpers import load_options
from tests.robustness.file_case_helpers import paths
from tests.robustness.file_case_helpers import setter
from tests.robustness.file_case_helpers import w
from tests.robustness.file_case_helpers import write

OPTIONS = "options file"
VOCABULARY = "vocabulary file"


def load_vocabulary(make):
    return lambda fx: Vocabulary.load(make(fx))


def vocabulary_with_nul(fx):
    tokens = VOCAB[:3] + ["a\x00b", "\x00", "世界"]
    path = write(fx, "vocab.txt", "".join(t + "\n" for t in tokens).encode())
    assert Vocabulary.load(path).tokens == tuple(tokens)


OPTIONS_ROWS = [
    error(
        OPTIONS,
        "missing file",
        FileNotFoundError,
        ["Options file", "gone.json", "not found"],
        load_options(w("gone.json")),
    ),
    error(
        OPTIONS,
        "empty file",
        ValueError,
        ["Options file", "empty.json", "not valid JSON"],
        load_options(lambda fx: write(fx, "empty.json", b"")),
    ),
    error(
        OPTIONS,
        "HDF5 weights given as options",
        ValueError,
        ["Options file", "weights.hdf5", "not UTF-8 JSON text"],
        load_options(lambda fx: paths(fx)["weights"]),
    ),
    error(
        OPTIONS,
        "a JSON list",
        ValueError,
        [
            "Options file",
            "list.json",
            "expected a JSON object",
            "found list",
        ],
        load_options(lambda fx: write(fx, "list.json", b"[1, 2]")),
    ),
    error(
        OPTIONS,
        '`"lstm": []`',
        ValueError,
        ["options.json", "`lstm`", "expected a JSON object", "found []"],
        load_options(edited_options(lambda o: o.update(lstm=[]))),
    ),
    error(
        OPTIONS,
        '`lstm.dim` = `"abc"`',
        ValueError,
        ["options.json", "`lstm.dim`", "expected an integer", "'abc'"],
        load_options(edited_options(setter("lstm", "dim", "abc"))),
    ),
    error(
        OPTIONS,
        "`lstm.dim` = 2.5",
        ValueError,
        ["options.json", "`lstm.dim`", "expected an integer", "2.5"],
        load_options(edited_options(setter("lstm", "dim", 2.5))),
    ),
    error(
        OPTIONS,
        "`lstm.projection_dim` = -1",
        ValueError,
        ["options.json", "`lstm.projection_dim` is -1", "integer >= 1"],
        load_options(edited_options(setter("lstm", "projection_dim", -1))),
    ),
    error(
        OPTIONS,
        "`char_cnn.filters` = `[[1]]`",
        ValueError,
        [
            "options.json",
            "`char_cnn.filters`",
            "[width, num_filters] pairs",
            "[1]",
        ],
        load_options(edited_options(setter("char_cnn", "filters", [[1]]))),
    ),
    error(
        OPTIONS,
        '`lstm.use_skip_connections` = `"yes"`',
        ValueError,
        [
            "options.json",
            "`lstm.use_skip_connections`",
            "true or false",
            "'yes'",
        ],
        load_options(
            edited_options(setter("lstm", "use_skip_connections", "yes"))
        ),
    ),
    error(
        OPTIONS,
        "`char_cnn.n_characters` = 300",
        ValueError,
        ["options.json", "`char_cnn.n_characters` is 300", "261 or 262"],
        load_options(edited_options(setter("char_cnn", "n_characters", 300))),
    ),
]


VOCABULARY_ROWS = [
    error(
        VOCABULARY,
        "empty file",
        ValueError,
        [
            "Vocabulary file",
            "empty_vocab.txt",
            "line 1",
            "first three lines must be",
            "found []",
        ],
        load_vocabulary(lambda fx: write(fx, "empty_vocab.txt", b"")),
    ),
    error(
        VOCABULARY,
        "random bytes",
        ValueError,
        [
            "Vocabulary file",
            "random_vocab.txt",
            "line 1",
            "first three lines must be",
        ],
        load_vocabulary(lambda fx: write(fx, "random_vocab.txt", RANDOM)),
    ),
    error(
        VOCABULARY,
        "a directory",
        IsADirectoryError,
        ["Is a directory", "tmp"],
        load_vocabulary(lambda fx: str(fx("tmp_path"))),
    ),
    ok(
        VOCABULARY,
        "NUL bytes and CJK inside tokens",
        "loaded as written (NUL is not a separator)",
        vocabulary_with_nul,
    ),
    ref(
        VOCABULARY,
        "not UTF-8, blank line, two tokens, repeats, wrong specials",
        "ValueError naming file and line",
        "tests/data/vocabulary_test.py::test_load_errors_name_file_and_line",
    ),
]
