"""`BiLM`s from TF1 checkpoints: the readers' arrays through the HDF5 loader.

`keras_elmo.weights.tfhub_checkpoint` and `weights.bilm_tf_checkpoint`
read a checkpoint into `(config, arrays in the weights HDF5 layout,
extras)`; this module builds the model from them. The arrays go through a
temporary weights HDF5 and `BiLM.from_allennlp`, so every shape check and
port hook of the HDF5 loader applies to them too.
"""

import os
import tempfile

import h5py
import numpy as np

from keras_elmo.weights.bilm_tf_checkpoint import read_bilm_tf_checkpoint
from keras_elmo.weights.hdf5 import expected_weight_shapes
from keras_elmo.weights.tfhub_checkpoint import MIX_WEIGHTS
from keras_elmo.weights.tfhub_checkpoint import read_tfhub_module


def bilm_from_arrays(cls, arrays, config, **kwargs):
    """Builds `cls(config)` and loads HDF5-layout `arrays` through the
    HDF5 loader (a temporary file), so the same checks and hooks apply."""
    with tempfile.TemporaryDirectory(prefix="keras_elmo_convert_") as tmp:
        path = os.path.join(tmp, "weights.hdf5")
        with h5py.File(path, "w") as f:
            for name in expected_weight_shapes(config):
                f.create_dataset(name, data=arrays[name].astype(np.float32))
        return cls.from_allennlp(config.to_options_dict(), path, **kwargs)


def bilm_from_tfhub(cls, path, options=None, return_mix=False, **kwargs):
    """`BiLM.from_tfhub`: the module's biLM, and with `return_mix` its
    learned mix `{"scalar_parameters", "gamma"}` (`aggregation/weights`,
    `aggregation/scaling`), which `ElmoLayer.from_tfhub` starts every
    `ScalarMix` from (trainable, as with `hub.Module(...,
    trainable=True)`), so that with `dropout=0` the layer's output is the
    module's `elmo` output."""
    config, arrays, mix = read_tfhub_module(path, options)
    bilm = bilm_from_arrays(cls, arrays, config, **kwargs)
    if not return_mix:
        return bilm
    if mix is None:
        raise ValueError(
            f"TF Hub module {os.fspath(path)!r} has no {MIX_WEIGHTS!r}; use "
            "BiLM.from_tfhub and a fresh ElmoLayer."
        )
    return bilm, mix


def bilm_from_bilm_tf_checkpoint(cls, path, options=None, **kwargs):
    """`(BiLM, softmax arrays or None)` from a bilm-tf checkpoint."""
    config, arrays, softmax = read_bilm_tf_checkpoint(path, options)
    return bilm_from_arrays(cls, arrays, config, **kwargs), softmax
