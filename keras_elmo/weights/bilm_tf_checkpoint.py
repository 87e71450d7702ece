"""Reads a bilm-tf training checkpoint (`model.ckpt-*`) with TensorFlow 2.

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

import logging
import os

import h5py
import numpy as np

from keras_elmo.utils.atomic import atomic_path
from keras_elmo.weights import tf_checkpoint

logger = logging.getLogger(__name__)

SCOPE = "lm/"
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
    prefix = tf_checkpoint.checkpoint_prefix(path, "bilm-tf checkpoint")
    source = f"bilm-tf checkpoint {prefix!r}"
    variables = tf_checkpoint.read_variables(prefix)
    config, arrays, names = tf_checkpoint.scoped_bilm_arrays(
        variables, SCOPE, source, options, lambda n: SCOPE + n
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
