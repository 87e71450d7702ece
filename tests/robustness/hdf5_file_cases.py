"""File cases of the HDF5 weight files: the biLM's weights and the
softmax. Each bad file raises an error naming the file, the dataset
and what was wrong, and leaves the model's weights untouched.
"""

import numpy as np

import keras_elmo
from keras_elmo.weights import hdf5 as softmax_hdf5
from tests.robustness.case_table import error
from tests.robustness.case_table import ok
from tests.robustness.case_table import ref
from tests.robustness.file_case_helpers import RANDOM
from tests.robustness.file_case_helpers import copy
from tests.robustness.file_case_helpers import edited_hdf5
from tests.robustness.file_case_helpers import paths
from tests.robustness.file_case_helpers import poison
from tests.robustness.file_case_helpers import replace
from tests.robustness.file_case_helpers import truncated
from tests.robustness.file_case_helpers import w
from tests.robustness.file_case_helpers import write

WEIGHTS = "weights file"
SOFTMAX = "softmax file"
HDF5_TEST = "tests/weights/bilm_hdf5_test.py"


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


def load_softmax(make):
    def run(fx):
        softmax = fx("language_model").softmax
        before = softmax.embeddings.numpy().copy()
        try:
            softmax_hdf5.load_softmax_hdf5(softmax, make(fx))
        finally:
            np.testing.assert_array_equal(before, softmax.embeddings.numpy())

    return run


def weights_round_trip_after_bad_load(fx):
    """A good file still loads bit-exactly (the cases above left no
    state behind)."""
    bilm = keras_elmo.BiLM.from_allennlp(
        paths(fx)["options"], paths(fx)["weights"]
    )
    for a, b in zip(bilm.weights, fx("tiny_bilm").weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


WEIGHTS_ROWS = [
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
            edited_hdf5("weights", "group.hdf5", replace("char_embed", "group"))
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
]


SOFTMAX_ROWS = [
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
]
