"""Writes TF1-format name-based checkpoints from a weights HDF5, for tests.

`tf.raw_ops.SaveV2` stores each tensor under exactly the name given (what
a TF1 `Saver` writes), so a test can lay out the variables of a TF Hub
`elmo/3` module or a bilm-tf training checkpoint with seeded weights.
"""

import os
import re

import h5py
import numpy as np
import tensorflow as tf


def hdf5_arrays(weights_path):
    arrays = {}
    with h5py.File(weights_path, "r") as f:
        f.visititems(
            lambda name, obj: (
                arrays.__setitem__(name, obj[...])
                if isinstance(obj, h5py.Dataset)
                else None
            )
        )
    return arrays


def tfhub_names(arrays):
    """HDF5 layout -> the `bilm/...` variables of a TF Hub elmo module."""
    out = {}
    for name, value in arrays.items():
        if name == "char_embed":
            pad = np.zeros((1, value.shape[1]), value.dtype)
            out["bilm/char_embed"] = np.concatenate([pad, value])
            continue
        name = re.sub(r"/LSTMCell/W_0$", "/rnn/lstm_cell/kernel", name)
        name = re.sub(r"/LSTMCell/B$", "/rnn/lstm_cell/bias", name)
        name = re.sub(
            r"/LSTMCell/W_P_0$", "/rnn/lstm_cell/projection/kernel", name
        )
        out["bilm/" + name] = value
    return out


def bilm_tf_names(arrays, new_spelling=False):
    """HDF5 layout -> the `lm/...` variables of a bilm-tf checkpoint."""
    out = {}
    for name, value in arrays.items():
        if new_spelling:
            name = re.sub(
                r"/RNN/MultiRNNCell/Cell(\d+)/LSTMCell/",
                r"/rnn/multi_rnn_cell/cell_\1/lstm_cell/",
                name,
            )
            name = re.sub(r"lstm_cell/W_0$", "lstm_cell/kernel", name)
            name = re.sub(r"lstm_cell/B$", "lstm_cell/bias", name)
            name = re.sub(
                r"lstm_cell/W_P_0$", "lstm_cell/projection/kernel", name
            )
        out["lm/" + name] = value
    return out


def write_checkpoint(prefix, variables):
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    names = sorted(variables)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(variables[n]) for n in names],
    )
