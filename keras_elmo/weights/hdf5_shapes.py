"""The dataset shapes a weights HDF5 must have, from the options alone.

Lets a downloaded file be checked without building the model: with `F =
sum(num_filters)`, `d` the character dim, `P` the projection and `H` the
cell size,

    char_embed                                   [261, d]
    CNN/W_cnn_{i}  [1, w_i, d, n_i]              CNN/b_cnn_{i}  [n_i]
    CNN_high_{k}/W_carry, W_transform [F, F]     b_carry, b_transform [F]
    CNN_proj/W_proj [F, P]                       CNN_proj/b_proj [P]
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/
        W_0 [2P, 4H]     B [4H]     W_P_0 [H, P]
"""

import os

from keras_elmo.text import char_vocab
from keras_elmo.weights.bilm_hdf5 import LSTM_CELL
from keras_elmo.weights.hdf5_reader import FileKind
from keras_elmo.weights.hdf5_reader import open_hdf5
from keras_elmo.weights.hdf5_reader import read_checked


def expected_weight_shapes(config):
    """`{dataset name: shape}` for a `BiLMConfig`, in file order."""
    d = config.char_embedding_dim
    width = config.num_filters
    proj, units = config.projection_dim, config.lstm_units
    shapes = {"char_embed": (char_vocab.NUM_CHARACTERS - 1, d)}
    for i, (w, n) in enumerate(config.filters):
        shapes[f"CNN/W_cnn_{i}"] = (1, w, d, n)
        shapes[f"CNN/b_cnn_{i}"] = (n,)
    for k in range(config.num_highway_layers):
        for kind in ("carry", "transform"):
            shapes[f"CNN_high_{k}/W_{kind}"] = (width, width)
            shapes[f"CNN_high_{k}/b_{kind}"] = (width,)
    shapes["CNN_proj/W_proj"] = (width, proj)
    shapes["CNN_proj/b_proj"] = (proj,)
    for direction in range(2):
        for layer in range(config.num_layers):
            cell = LSTM_CELL.format(d=direction, l=layer)
            shapes[f"{cell}/W_0"] = (2 * proj, 4 * units)
            shapes[f"{cell}/B"] = (4 * units,)
            shapes[f"{cell}/W_P_0"] = (units, proj)
    return shapes


# Errors for a downloaded file: an error page saved in its place is likely.
DOWNLOADED_WEIGHTS = FileKind(
    name="Weights",
    layout=" (truncated, corrupt, or an error page saved in its place)",
    shape_source="from the options",
)


def verify_weights_file(path, config, label=None):
    """Checks that `path` is a complete weights HDF5 for `config`.

    Opens the file, and for every dataset the options imply checks that it
    exists, has the expected shape, reads fully (a truncated file often
    opens but fails here) and holds finite numbers.

    Raises:
        ValueError: naming the file (`label`, default the path), the
            dataset and the problem.
    """
    label = label or repr(os.fspath(path))
    with open_hdf5(path, DOWNLOADED_WEIGHTS, label) as f:
        for name, shape in expected_weight_shapes(config).items():
            read_checked(f, name, shape, DOWNLOADED_WEIGHTS, label)
