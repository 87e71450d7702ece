"""TensorFlow 1 name-based checkpoints -> arrays in the weights HDF5 layout.

Two readers, the TF Hub `elmo/3` module (`read_tfhub_module`) and the
bilm-tf training checkpoint (`read_bilm_tf_checkpoint`), each name their
variables; the shared code reads them with TensorFlow 2
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

TF Hub `elmo/3` (`read_tfhub_module`), TF1 Hub format.

A TF1 Hub module is a folder with `tfhub_module.pb`, `saved_model.pb` and
`variables/variables.{index,data-*}`; only the checkpoint is read, with
`tf.train.load_checkpoint` (no `hub.Module`, no TF1 graph). Variables and
shapes expected (`d` character dim, `w_i`/`n_i` filter width/count, `F =
sum n_i`, `P` projection, `H` cell, `L` layers; `elmo/3`: d=16, F=2048,
P=512, H=4096, L=2):

    bilm/char_embed                         [262, d]  row 0 = padding
    bilm/CNN/W_cnn_{i}                      [1, w_i, d, n_i]
    bilm/CNN/b_cnn_{i}                      [n_i]
    bilm/CNN_high_{k}/W_carry, W_transform  [F, F]
    bilm/CNN_high_{k}/b_carry, b_transform  [F]
    bilm/CNN_proj/W_proj                    [F, P]
    bilm/CNN_proj/b_proj                    [P]
    bilm/RNN_{d}/RNN/MultiRNNCell/Cell{l}/rnn/lstm_cell/kernel   [2P, 4H]
    bilm/RNN_{d}/RNN/MultiRNNCell/Cell{l}/rnn/lstm_cell/bias     [4H]
    bilm/RNN_{d}/RNN/MultiRNNCell/Cell{l}/rnn/lstm_cell/projection/kernel
                                                                 [H, P]
    aggregation/weights                     [L + 1]   the `elmo` mix
    aggregation/scaling                     []        its gamma

These are bilm-tf's inference graph (`BidirectionalLanguageModel`, whose
character embedding gains the padding row) under the module's `bilm` scope,
plus `weight_layers`' mix, as Google exported it; `d = 0` is forward. The
module's `elmo` output is `scaling * sum_j softmax(weights)_j * h_j` over
`h_0 = [x; x]`, `h_1..h_L`, which is `ScalarMix` with `s = weights`,
`gamma = scaling`. Other variables (optimiser slots, LSTM state buffers)
are ignored. If a module differs, list its variables with
`tf.train.list_variables("MODULE/variables/variables")`.

bilm-tf training checkpoints (`read_bilm_tf_checkpoint`, `model.ckpt-*`).

bilm-tf's `train_elmo.py` saves every variable under the `lm` scope; this
module applies the mapping of bilm-tf's `dump_weights` (strip `lm/`, rename
the LSTM variables, keep the rest) with `tf.train.load_checkpoint`, no TF1
code. Variables and shapes read (TF 1.0/1.1 spelling shown; the TF >= 1.2
spelling `lm/RNN_{d}/rnn/multi_rnn_cell/cell_{l}/lstm_cell/{kernel, bias,
projection/kernel}` is accepted too):

    lm/char_embed                           [261, d]  (training ids: no
                                                       padding-token row)
    lm/CNN/W_cnn_{i}, b_cnn_{i}             [1, w_i, d, n_i], [n_i]
    lm/CNN_high_{k}/W_carry, W_transform    [F, F]
    lm/CNN_high_{k}/b_carry, b_transform    [F]
    lm/CNN_proj/W_proj, b_proj              [F, P], [P]
    lm/RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0     [2P, 4H]
    lm/RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/B       [4H]
    lm/RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_P_0   [H, P]
    lm/softmax/W                            [V, P]  (the output softmax)
    lm/softmax/b                            [V]

Optimiser slots (`.../Adagrad`), `global_step` and the like are ignored.
The options file bilm-tf trained with (`n_characters` 261) gives the
architecture; a `char_embed` of 262 rows (trained with 262) loses its
padding row 0 as in the TF Hub reader.
"""

import contextlib
import logging
import os
import re
import tarfile
import tempfile

import h5py
import numpy as np

from keras_elmo.config import BiLMConfig
from keras_elmo.text import char_vocab
from keras_elmo.utils.atomic import atomic_path
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


TFHUB_SCOPE = "bilm/"
MIX_WEIGHTS = "aggregation/weights"
MIX_SCALING = "aggregation/scaling"


@contextlib.contextmanager
def module_folder(path):
    """Yields the module folder; a `.tar.gz` is unpacked to a temp folder."""
    path = os.fspath(path)
    if os.path.isfile(path) and tarfile.is_tarfile(path):
        with tempfile.TemporaryDirectory(prefix="keras_elmo_tfhub_") as tmp:
            with tarfile.open(path) as archive:
                archive.extractall(tmp, filter="data")
            yield _find_variables(tmp, path)
        return
    if not os.path.isdir(path):
        raise FileNotFoundError(
            f"TF Hub module {path!r} not found (expected the module folder, "
            "with variables/variables.index, or its .tar.gz)."
        )
    yield _find_variables(path, path)


def _find_variables(root, shown):
    for folder, _, files in os.walk(root):
        if "variables.index" in files and os.path.basename(folder) == (
            "variables"
        ):
            return os.path.join(folder, "variables")
    raise FileNotFoundError(
        f"TF Hub module {shown!r} has no variables/variables.index (is it a "
        "TF1 Hub module such as google/elmo/3?)."
    )


def read_tfhub_module(path, options=None):
    """`(config, arrays, mix)` of a TF Hub ELMo module.

    `arrays` are in the weights HDF5 layout; `mix` is
    `{"scalar_parameters": [L + 1 floats], "gamma": float}` or None when the
    module has no `aggregation/*` variables.
    """
    source = f"TF Hub module {os.fspath(path)!r}"
    with module_folder(path) as prefix:
        variables = read_variables(prefix)
    config, arrays, names = scoped_bilm_arrays(
        variables, TFHUB_SCOPE, source, options, module_name
    )
    mix = None
    if MIX_WEIGHTS in variables:
        weights = np.asarray(variables[MIX_WEIGHTS], np.float32).reshape(-1)
        if weights.shape != (config.num_layers + 1,):
            raise ValueError(
                f"{source}, variable {MIX_WEIGHTS!r}: expected shape "
                f"({config.num_layers + 1},), found {weights.shape}."
            )
        scaling = np.asarray(variables.get(MIX_SCALING, 1.0), np.float32)
        mix = {
            "scalar_parameters": [float(w) for w in weights],
            "gamma": float(scaling.reshape(())),
        }
    ignored = sorted(set(variables) - set(names.values()) - {MIX_WEIGHTS})
    if ignored:
        logger.info("%s: ignored variables %s", source, ignored)
    return config, arrays, mix


def module_name(dataset):
    """The module variable expected for a weights HDF5 dataset name."""
    for old, new in (
        ("/LSTMCell/W_0", "/rnn/lstm_cell/kernel"),
        ("/LSTMCell/B", "/rnn/lstm_cell/bias"),
        ("/LSTMCell/W_P_0", "/rnn/lstm_cell/projection/kernel"),
    ):
        if dataset.endswith(old):
            dataset = dataset[: -len(old)] + new
    return TFHUB_SCOPE + dataset


BILM_TF_SCOPE = "lm/"
SOFTMAX = ("softmax/W", "softmax/b")


def read_bilm_tf_checkpoint(path, options=None):
    """`(config, arrays, softmax)` of a bilm-tf checkpoint.

    Args:
        path: a checkpoint prefix (`model.ckpt-1000`) or its folder.
        options: the options.json (path or dict) bilm-tf trained with, or
            None to infer it from the shapes (with the published clips).

    Returns:
        The `BiLMConfig`, the weights in the HDF5 layout, and
        `{"softmax/W": [V, P], "softmax/b": [V]}` (None when absent).
    """
    prefix = checkpoint_prefix(path, "bilm-tf checkpoint")
    source = f"bilm-tf checkpoint {prefix!r}"
    variables = read_variables(prefix)
    config, arrays, names = scoped_bilm_arrays(
        variables, BILM_TF_SCOPE, source, options, lambda n: BILM_TF_SCOPE + n
    )
    softmax = None
    if all(name in arrays for name in SOFTMAX):
        weight, bias = arrays[SOFTMAX[0]], arrays[SOFTMAX[1]]
        if weight.ndim != 2 or weight.shape[1] != config.projection_dim:
            raise ValueError(
                f"{source}, variable 'lm/softmax/W': expected shape [V, "
                f"{config.projection_dim}], found {weight.shape}."
            )
        if bias.shape != (weight.shape[0],):
            raise ValueError(
                f"{source}, variable 'lm/softmax/b': expected shape "
                f"({weight.shape[0]},), found {bias.shape}."
            )
        softmax = {SOFTMAX[0]: weight, SOFTMAX[1]: bias}
    return config, arrays, softmax


def save_softmax_arrays(softmax, path):
    """Writes `softmax/W`, `softmax/b` as `keras-elmo train` names them."""
    with atomic_path(os.fspath(path)) as tmp:
        with h5py.File(tmp, "w") as f:
            for name in SOFTMAX:
                f.create_dataset(
                    name, data=np.asarray(softmax[name], np.float32)
                )
    logger.info("Wrote the softmax to %s", path)
