"""Reads and writes the bilm-tf / AllenNLP ELMo weights HDF5 (`dump_weights`).

One declarative table maps every HDF5 dataset to a slice of a Keras
variable, with a hook for each layout difference:

- `char_embed` has no padding row; ours is implicit (`CharCNNEmbedding`
  keeps the 261 real rows), so it maps one to one.
- `CNN/W_cnn_{i}` is `[1, width, dim, n]`; our conv kernel drops the 1.
- `RNN_{d}/.../Cell{l}/LSTMCell/W_0` is `[P + P, 4H]`: the input rows then
  the recurrent rows; we keep them as two kernels. Gate order i, j, f, o and
  the stored bias (without the forget bias 1.0, which our layer adds at run
  time as TensorFlow's `LSTMCell` does) are the same on both sides, so the
  round trip is bit-exact.
- the highway keeps bilm-tf's carry convention, so no sign flip.
"""

import logging
import os

import h5py
import numpy as np

from keras_elmo.utils.atomic import atomic_path

logger = logging.getLogger(__name__)

LSTM_CELL = "RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell"


def _weight_table(bilm):
    """`[(dataset, variable, read_hook, write_hook)]` for every weight.

    `read_hook(array) -> value of the variable slice`, `write_hook(value)
    -> array`. A variable slice is `(variable, index)`, index `None` or the
    direction (0 forward, 1 backward) of a stacked LSTM weight.
    """
    cfg = bilm.config
    proj = cfg.projection_dim
    table = [("char_embed", (bilm.char_cnn.char_embeddings, None), None)]
    for i in range(len(cfg.filters)):
        table.append(
            (f"CNN/W_cnn_{i}", (bilm.char_cnn.kernels[i], None), "squeeze0")
        )
        table.append((f"CNN/b_cnn_{i}", (bilm.char_cnn.biases[i], None), None))
    for k, block in enumerate(bilm.highway.blocks):
        for name, key in (
            ("W_carry", "carry_kernel"),
            ("b_carry", "carry_bias"),
            ("W_transform", "transform_kernel"),
            ("b_transform", "transform_bias"),
        ):
            table.append((f"CNN_high_{k}/{name}", (block[key], None), None))
    dense = bilm.token_projection
    table.append(("CNN_proj/W_proj", (dense.kernel, None), None))
    table.append(("CNN_proj/b_proj", (dense.bias, None), None))
    lstm = bilm.bilstm
    for d in range(2):
        for layer in range(cfg.num_layers):
            cell = LSTM_CELL.format(d=d, l=layer)
            table.append(
                (
                    f"{cell}/W_0",
                    (
                        lstm.kernels[layer],
                        lstm.recurrent_kernels[layer],
                        d,
                        proj,
                    ),
                    "split_w0",
                )
            )
            table.append((f"{cell}/B", (lstm.biases[layer], d), None))
            table.append(
                (f"{cell}/W_P_0", (lstm.projection_kernels[layer], d), None)
            )
    return table


def _variable_value(target):
    variable, index = target[0], target[-1] if len(target) == 2 else None
    value = np.asarray(variable.numpy())
    return value if index is None else value[index]


def _expected_shape(target, hook):
    if hook == "split_w0":
        kernel, recurrent, d, _ = target
        return (kernel.shape[1] + recurrent.shape[1],) + tuple(kernel.shape[2:])
    variable, index = target
    shape = (
        tuple(variable.shape) if index is None else tuple(variable.shape[1:])
    )
    return (1,) + shape if hook == "squeeze0" else shape


def _check_file(path):
    if not os.path.exists(path):
        raise FileNotFoundError(f"Weights file not found: {path!r}.")
    if not h5py.is_hdf5(path):
        raise ValueError(
            f"Weights file {path!r} is not an HDF5 file (expected the "
            "bilm-tf / AllenNLP `weights.hdf5` layout)."
        )


def read_float_dataset(path, dataset, kind):
    """A numeric HDF5 dataset as float32; a clear error for anything else.

    `kind` ("Weights", "Softmax") starts the message, which names the file,
    the dataset, and the dtype found or the read error (a truncated file
    often opens but fails here).
    """
    if dataset.dtype.kind not in "fiu":
        raise ValueError(
            f"{kind} file {path!r}, dataset {dataset.name.lstrip('/')!r}: "
            f"expected numbers (float32), found dtype {dataset.dtype}."
        )
    try:
        return np.asarray(dataset[...], dtype=np.float32)
    except (OSError, RuntimeError, ValueError) as e:
        raise ValueError(
            f"{kind} file {path!r}, dataset {dataset.name.lstrip('/')!r} "
            f"cannot be read (is the file truncated or corrupt?): {e}"
        ) from e


def load_bilm_hdf5(bilm, path):
    """Loads a bilm-tf / AllenNLP weights HDF5 into a built `BiLM`.

    Every dataset's shape is checked against the model built from the
    options file; a missing dataset or a wrong shape raises a `ValueError`
    naming the file, the dataset, and the expected and found shapes, and
    nothing is assigned until every dataset has been read and checked.
    """
    path = os.fspath(path)
    _check_file(path)
    pending = {}
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"Cannot read weights file {path!r}: {e}") from e
    with f:
        for name, target, hook in _weight_table(bilm):
            expected = _expected_shape(target, hook)
            if name not in f or not isinstance(f[name], h5py.Dataset):
                raise ValueError(
                    f"Weights file {path!r} has no dataset {name!r} (expected "
                    f"shape {expected}); is it an ELMo weights file for these "
                    "options?"
                )
            dataset = f[name]
            if tuple(dataset.shape) != expected:
                raise ValueError(
                    f"Weights file {path!r}, dataset {name!r}: expected shape "
                    f"{expected} (from the options), found "
                    f"{tuple(dataset.shape)}. Do the options match the "
                    "weights?"
                )
            array = read_float_dataset(path, dataset, "Weights")
            if not np.all(np.isfinite(array)):
                raise ValueError(
                    f"Weights file {path!r}, dataset {name!r} holds "
                    "non-finite values (NaN or inf)."
                )
            pending[name] = (target, hook, array)
    for target, hook, array in pending.values():
        _assign(target, hook, array)
    logger.info("Loaded %d datasets from %s", len(pending), path)


def _assign(target, hook, array):
    if hook == "split_w0":
        kernel, recurrent, d, proj = target
        _assign((kernel, d), None, array[:proj])
        _assign((recurrent, d), None, array[proj:])
        return
    if hook == "squeeze0":
        array = array[0]
    variable, index = target
    if index is None:
        variable.assign(array.astype(variable.dtype))
    else:
        value = np.array(variable.numpy())
        value[index] = array
        variable.assign(value)


def save_bilm_hdf5(bilm, path, dtype="float32"):
    """Writes a `BiLM`'s weights in the bilm-tf / AllenNLP HDF5 layout.

    Datasets with exactly the names AllenNLP's loader reads, float32 by
    default (`dtype="float16"` halves the file for shipping; loading casts
    back to float32); written to a temporary file and renamed, so `path` is
    never half-written.
    """
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            for name, target, hook in _weight_table(bilm):
                if hook == "split_w0":
                    kernel, recurrent, d, _ = target
                    array = np.concatenate(
                        [
                            _variable_value((kernel, d)),
                            _variable_value((recurrent, d)),
                        ]
                    )
                else:
                    array = _variable_value(target)
                    if hook == "squeeze0":
                        array = array[None]
                f.create_dataset(name, data=array.astype(dtype))
    logger.info("Wrote ELMo weights to %s", path)
