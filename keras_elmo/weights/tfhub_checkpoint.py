"""Reads a TF Hub `elmo/3` module (TF1 Hub format) with TensorFlow 2.

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
"""

import contextlib
import logging
import os
import tarfile
import tempfile

import numpy as np

from keras_elmo.weights import tf_checkpoint

logger = logging.getLogger(__name__)

SCOPE = "bilm/"
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
        variables = tf_checkpoint.read_variables(prefix)
    config, arrays, names = tf_checkpoint.scoped_bilm_arrays(
        variables, SCOPE, source, options, module_name
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
    return SCOPE + dataset
