"""Cases over files: weights HDF5, options JSON, vocabularies, softmax.

Each bad file gives an error naming the file, the dataset or key, and what
was wrong; nothing is assigned to the model before every check passes.
"""

import json
import shutil

import h5py
import numpy as np

import keras_elmo
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.weights import model_files
from keras_elmo.weights import softmax_hdf5
from tests.robustness.case_table import VOCAB
from tests.robustness.case_table import error
from tests.robustness.case_table import number
from tests.robustness.case_table import ok
from tests.robustness.case_table import ref

WEIGHTS = "weights file"
OPTIONS = "options file"
VOCABULARY = "vocabulary file"
SOFTMAX = "softmax file"
HDF5_TEST = "tests/weights/bilm_hdf5_test.py"


def paths(fx):
    return model_files.model_paths(fx("model_dir"))


def copy(fx, key, name):
    target = str(fx("tmp_path") / name)
    shutil.copyfile(paths(fx)[key], target)
    return target


def write(fx, name, data):
    path = fx("tmp_path") / name
    path.write_bytes(data)
    return str(path)


def truncated(fx, key, name):
    with open(paths(fx)[key], "rb") as f:
        data = f.read()
    return write(fx, name, data[: len(data) // 2])


def edited_hdf5(key, name, edit):
    """A copy of the model's `key` file with `edit(h5py.File)` applied."""

    def make(fx):
        path = copy(fx, key, name)
        with h5py.File(path, "a") as f:
            edit(f)
        return path

    return make


def replace(dataset, value):
    def edit(f):
        del f[dataset]
        if isinstance(value, str) and value == "group":
            f.create_group(dataset)
        else:
            f.create_dataset(dataset, data=value)

    return edit


def poison(dataset, value):
    def edit(f):
        array = f[dataset][...]
        array.flat[0] = value
        f[dataset][...] = array

    return edit


def load_weights(make):
    def run(fx):
        variables = [v.numpy().copy() for v in fx("tiny_bilm").weights]
        try:
            keras_elmo.BiLM.from_allennlp(paths(fx)["options"], make(fx))
        finally:
            # A failed load never touches an existing model's weights.
            for before, v in zip(variables, fx("tiny_bilm").weights):
                np.testing.assert_array_equal(before, v.numpy())

    return run


def options_dict(fx):
    with open(paths(fx)["options"], encoding="utf-8") as f:
        return json.load(f)


def edited_options(edit):
    def make(fx):
        options = options_dict(fx)
        edit(options)
        return write(fx, "options.json", json.dumps(options).encode())

    return make


def setter(section, key, value):
    def edit(options):
        options[section][key] = value

    return edit


def load_options(make):
    return lambda fx: keras_elmo.BiLMConfig.from_options_json(make(fx))


def load_vocabulary(make):
    return lambda fx: Vocabulary.load(make(fx))


def load_softmax(make):
    def run(fx):
        softmax = fx("language_model").softmax
        before = softmax.embeddings.numpy().copy()
        try:
            softmax_hdf5.load_softmax_hdf5(softmax, make(fx))
        finally:
            np.testing.assert_array_equal(before, softmax.embeddings.numpy())

    return run


def vocabulary_with_nul(fx):
    tokens = VOCAB[:3] + ["a\x00b", "\x00", "世界"]
    path = write(fx, "vocab.txt", "".join(t + "\n" for t in tokens).encode())
    assert Vocabulary.load(path).tokens == tuple(tokens)


def weights_round_trip_after_bad_load(fx):
    """A good file still loads bit-exactly (the cases above left no
    state behind)."""
    bilm = keras_elmo.BiLM.from_allennlp(
        paths(fx)["options"], paths(fx)["weights"]
    )
    for a, b in zip(bilm.weights, fx("tiny_bilm").weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


RANDOM = bytes(range(256)) * 8


def w(name):
    return lambda fx: str(fx("tmp_path") / name)


CASES = number(
    "FILE",
    [
        error(
            WEIGHTS,
            "random bytes",
            ValueError,
            ["Weights file", "random.hdf5", "is not an HDF5 file"],
            load_weights(lambda fx: write(fx, "random.hdf5", RANDOM)),
        ),
        error(
            WEIGHTS,
            "empty (0 bytes)",
            ValueError,
            ["Weights file", "empty.hdf5", "is not an HDF5 file"],
            load_weights(lambda fx: write(fx, "empty.hdf5", b"")),
        ),
        error(
            WEIGHTS,
            "truncated to half",
            ValueError,
            ["Cannot read weights file", "half.hdf5", "truncated file"],
            load_weights(lambda fx: truncated(fx, "weights", "half.hdf5")),
        ),
        error(
            WEIGHTS,
            "missing file",
            FileNotFoundError,
            ["Weights file not found", "nothing.hdf5"],
            load_weights(w("nothing.hdf5")),
        ),
        error(
            WEIGHTS,
            "an options JSON given as the weights",
            ValueError,
            ["Weights file", "options_copy.json", "is not an HDF5 file"],
            load_weights(lambda fx: copy(fx, "options", "options_copy.json")),
        ),
        error(
            WEIGHTS,
            "`char_embed` is a group, not a dataset",
            ValueError,
            [
                "group.hdf5",
                "has no dataset 'char_embed'",
                "expected shape (261, 4)",
            ],
            load_weights(
                edited_hdf5(
                    "weights", "group.hdf5", replace("char_embed", "group")
                )
            ),
        ),
        error(
            WEIGHTS,
            "`CNN/b_cnn_0` holds strings of the right shape",
            ValueError,
            [
                "strings.hdf5",
                "'CNN/b_cnn_0'",
                "expected numbers (float32)",
                "found dtype object",
            ],
            load_weights(
                edited_hdf5(
                    "weights",
                    "strings.hdf5",
                    replace("CNN/b_cnn_0", np.array(["x"] * 4, dtype=object)),
                )
            ),
        ),
        error(
            WEIGHTS,
            "an inf in `CNN_proj/W_proj`",
            ValueError,
            ["inf.hdf5", "'CNN_proj/W_proj'", "non-finite values"],
            load_weights(
                edited_hdf5(
                    "weights", "inf.hdf5", poison("CNN_proj/W_proj", np.inf)
                )
            ),
        ),
        ref(
            WEIGHTS,
            "a dataset missing",
            "ValueError naming file, dataset and expected shape",
            f"{HDF5_TEST}::test_missing_dataset_is_named",
        ),
        ref(
            WEIGHTS,
            "a dataset of the wrong shape",
            "ValueError naming dataset, expected and found shapes",
            f"{HDF5_TEST}::test_wrong_shape_names_dataset_expected_and_found",
        ),
        ref(
            WEIGHTS,
            "options of another model (mismatched)",
            "ValueError naming the first mismatched dataset",
            f"{HDF5_TEST}::test_options_that_do_not_match_the_weights",
        ),
        ok(
            WEIGHTS,
            "the good file, after all the bad ones",
            "bit-identical weights",
            weights_round_trip_after_bad_load,
        ),
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
            load_options(
                edited_options(setter("char_cnn", "n_characters", 300))
            ),
        ),
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
        error(
            SOFTMAX,
            "missing file",
            FileNotFoundError,
            ["Softmax file not found", "none.hdf5"],
            load_softmax(w("none.hdf5")),
        ),
        error(
            SOFTMAX,
            "random bytes",
            ValueError,
            ["Softmax file", "random.hdf5", "is not an HDF5 file"],
            load_softmax(lambda fx: write(fx, "random.hdf5", RANDOM)),
        ),
        error(
            SOFTMAX,
            "truncated to half",
            ValueError,
            ["Cannot read softmax file", "half.hdf5", "truncated file"],
            load_softmax(lambda fx: truncated(fx, "softmax", "half.hdf5")),
        ),
        error(
            SOFTMAX,
            "`softmax/b` missing",
            ValueError,
            [
                "Softmax file",
                "no_b.hdf5",
                "no dataset 'softmax/b'",
                "expected shape (8,)",
            ],
            load_softmax(
                edited_hdf5(
                    "softmax", "no_b.hdf5", lambda f: f.__delitem__("softmax/b")
                )
            ),
        ),
        error(
            SOFTMAX,
            "`softmax/W` for another vocabulary (9 rows)",
            ValueError,
            [
                "wide.hdf5",
                "'softmax/W'",
                "expected shape (8, 16)",
                "found (9, 16)",
            ],
            load_softmax(
                edited_hdf5(
                    "softmax",
                    "wide.hdf5",
                    replace("softmax/W", np.zeros([9, 16], np.float32)),
                )
            ),
        ),
        error(
            SOFTMAX,
            "`softmax/W` holds strings",
            ValueError,
            ["strings.hdf5", "'softmax/W'", "expected numbers", "found dtype"],
            load_softmax(
                edited_hdf5(
                    "softmax",
                    "strings.hdf5",
                    replace("softmax/W", np.full([8, 16], "x", dtype=object)),
                )
            ),
        ),
        error(
            SOFTMAX,
            "a NaN in `softmax/b`",
            ValueError,
            ["nan.hdf5", "'softmax/b'", "non-finite values"],
            load_softmax(
                edited_hdf5("softmax", "nan.hdf5", poison("softmax/b", np.nan))
            ),
        ),
    ],
)
