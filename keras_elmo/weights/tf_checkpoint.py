"""TensorFlow 1 name-based checkpoints -> arrays in the weights HDF5 layout.

Shared by the TF Hub `elmo/3` reader (`tfhub_checkpoint.py`) and the
bilm-tf training checkpoint reader (`bilm_tf_checkpoint.py`): each names
its variables, this module reads them with TensorFlow 2
(`tf.train.load_checkpoint`, no graph, no session), renames the LSTM
variables to the `dump_weights` names, infers the options from the shapes
and checks every shape. Building the biLM from the arrays is
`keras_elmo.models.bilm_io`'s.

LSTM renames (after the format's scope prefix is removed), the ones
bilm-tf's `dump_weights` applies, for every TF 1.x spelling:

    RNN_d/rnn/multi_rnn_cell/cell_l/...   -> RNN_d/RNN/MultiRNNCell/Celll/...
    .../[rnn/]lstm_cell/kernel            -> .../LSTMCell/W_0   [2P, 4H]
    .../[rnn/]lstm_cell/bias              -> .../LSTMCell/B     [4H]
    .../[rnn/]lstm_cell/projection/kernel -> .../LSTMCell/W_P_0 [H, P]

The bias excludes TensorFlow's forget bias of 1.0 in every format (all
built `LSTMCell(forget_bias=1.0)`), as in the HDF5.
"""

import logging
import os
import re

import numpy as np

from keras_elmo.config import BiLMConfig
from keras_elmo.text import char_vocab
from keras_elmo.weights.hdf5 import expected_weight_shapes

logger = logging.getLogger(__name__)

_LSTM_RENAMES = (
    (r"/rnn/multi_rnn_cell/cell_(\d+)/", r"/RNN/MultiRNNCell/Cell\1/"),
    (r"/(?:rnn/)?lstm_cell/projection/kernel$", "/LSTMCell/W_P_0"),
    (r"/(?:rnn/)?lstm_cell/kernel$", "/LSTMCell/W_0"),
    (r"/(?:rnn/)?lstm_cell/bias$", "/LSTMCell/B"),
)

# What the checkpoint cannot tell: bilm-tf's published values.
DEFAULT_UNSTORED_OPTIONS = {
    "cell_clip": 3.0,
    "projection_clip": 3.0,
    "use_skip_connections": True,
    "activation": "relu",
}


def hdf5_name(name):
    """A checkpoint variable name (prefix removed) -> the HDF5 dataset name."""
    for pattern, replacement in _LSTM_RENAMES:
        name = re.sub(pattern, replacement, name)
    return name


def checkpoint_prefix(path, what):
    """The checkpoint prefix for a prefix, a folder with a `checkpoint`
    file (latest), or a folder holding one `*.index`; a clear error else."""
    import tensorflow as tf

    path = os.fspath(path)
    if os.path.exists(path + ".index"):
        return path
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest:
            return latest
        indexes = sorted(n for n in os.listdir(path) if n.endswith(".index"))
        if len(indexes) == 1:
            return os.path.join(path, indexes[0][: -len(".index")])
    raise FileNotFoundError(
        f"{what} {path!r}: no TensorFlow checkpoint there (expected a "
        "prefix such as model.ckpt-1000 with its .index and .data files, "
        "or a folder holding them)."
    )


def read_variables(prefix):
    """`{name: np.ndarray}` of every variable in a name-based checkpoint."""
    import tensorflow as tf

    try:
        reader = tf.train.load_checkpoint(prefix)
        names = [name for name, _ in tf.train.list_variables(prefix)]
        return {name: np.asarray(reader.get_tensor(name)) for name in names}
    except (tf.errors.OpError, ValueError) as e:
        raise ValueError(
            f"Cannot read the TensorFlow checkpoint {prefix!r}: {e}"
        ) from e


def infer_config(arrays, source, options=None):
    """The `BiLMConfig` of HDF5-layout `arrays`, or of `options` if given.

    Shapes give the filters, character dim, highway count, `P`, `H` and
    `L`; the clips, skip connections and activation are not stored in a
    checkpoint and default to `DEFAULT_UNSTORED_OPTIONS` (every published
    ELMo), unless `options` (a bilm-tf options dict or path) is given.
    """
    if options is not None:
        return BiLMConfig.from_options_json(options)
    try:
        filters = []
        while f"CNN/W_cnn_{len(filters)}" in arrays:
            shape = arrays[f"CNN/W_cnn_{len(filters)}"].shape
            filters.append((shape[1], shape[3]))
        highway = 0
        while f"CNN_high_{highway}/W_carry" in arrays:
            highway += 1
        layers = 0
        while f"RNN_0/RNN/MultiRNNCell/Cell{layers}/LSTMCell/W_0" in arrays:
            layers += 1
        cell = "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell/W_P_0"
        return BiLMConfig(
            filters=tuple(filters),
            char_embedding_dim=int(arrays["char_embed"].shape[1]),
            num_highway_layers=highway,
            projection_dim=int(arrays["CNN_proj/W_proj"].shape[1]),
            lstm_units=int(arrays[cell].shape[0]),
            num_layers=layers,
            **DEFAULT_UNSTORED_OPTIONS,
        )
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(
            f"{source}: cannot infer the biLM options from the variables "
            f"({type(e).__name__}: {e}); found {sorted(arrays)[:12]}..."
        ) from e


def check_arrays(arrays, config, source, variable_name):
    """Every dataset the config implies is there with its shape.

    `variable_name(dataset)` gives the checkpoint's own name of a dataset,
    so errors name the variable the user can look up with
    `tf.train.list_variables`.
    """
    for name, shape in expected_weight_shapes(config).items():
        original = variable_name(name)
        if name not in arrays:
            raise ValueError(
                f"{source} has no variable {original!r} (expected shape "
                f"{shape}); list yours with tf.train.list_variables(...)."
            )
        if tuple(arrays[name].shape) != shape:
            raise ValueError(
                f"{source}, variable {original!r}: expected shape {shape}, "
                f"found {tuple(arrays[name].shape)}."
            )


def drop_padding_row(char_embed, source, variable):
    """`[262, d]` (row 0 = padding, zeros) -> the HDF5's `[261, d]`."""
    rows = char_vocab.NUM_CHARACTERS
    if char_embed.shape[0] == rows:
        if np.any(char_embed[0] != 0):
            logger.warning(
                "%s: %s row 0 (padding) is not zero; it is dropped.",
                source,
                variable,
            )
        return char_embed[1:]
    return char_embed


def scoped_bilm_arrays(variables, scope, source, options, original_name):
    """The biLM weights under `scope` of a TF1 checkpoint, checked.

    Args:
        variables: `{checkpoint name: array}` (`read_variables`).
        scope: str, the prefix of the biLM's variables (`"lm/"`, ...).
        source: str, how errors name the checkpoint.
        options: options.json path or dict, or None to infer them.
        original_name: `hdf5 key -> checkpoint name` for keys the
            checkpoint lacks, so an error names what was expected.

    Returns:
        `(config, arrays, names)`: the `BiLMConfig`, the weights in the
        HDF5 layout (the char embedding without its padding row) and each
        key's checkpoint name.
    """
    arrays, names = {}, {}
    for name, value in variables.items():
        if not name.startswith(scope):
            continue
        key = hdf5_name(name[len(scope) :])
        arrays[key], names[key] = value, name
    if "char_embed" in arrays:
        arrays["char_embed"] = drop_padding_row(
            arrays["char_embed"], source, names["char_embed"]
        )
    config = infer_config(arrays, source, options)
    check_arrays(
        arrays, config, source, lambda n: names.get(n) or original_name(n)
    )
    return config, arrays, names
