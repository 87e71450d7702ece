"""The ELMoForManyLangs weight table: every tensor, its hook, its variable.

See `keras_elmo.weights.elmoformanylangs` for the format and the list of
tensors; `load_weights(bilm, model)` assigns a `FolderModel`'s tensors.
"""

import dataclasses
import os

import numpy as np

from keras_elmo.weights.elmoformanylangs import ENCODER
from keras_elmo.weights.elmoformanylangs import TOKEN_EMBEDDER

# The package's LSTM gate blocks i, f, g, o; ours (TensorFlow's) i, j, f, o.
_GATES_TO_OURS = (0, 2, 1, 3)


def _transpose(a):
    return np.ascontiguousarray(a.T)


def _conv(a):
    # torch Conv1d [out, in, width] -> ours [width, in, out]
    return np.ascontiguousarray(np.transpose(a, (2, 1, 0)))


def _gate_columns(a):
    """[..., 4H] in the package's gate order -> ours (i, j=g, f, o)."""
    blocks = np.split(a, 4, axis=-1)
    return np.concatenate([blocks[k] for k in _GATES_TO_OURS], axis=-1)


def _lstm_kernel(a):
    return _gate_columns(a.T)


def _lstm_bias(a):
    # The package's bias includes the forget bias; ours adds 1.0 at run
    # time (TensorFlow's LSTMCell, and the bilm-tf HDF5 we also write).
    bias = _gate_columns(a).copy()
    units = bias.shape[-1] // 4
    bias[2 * units : 3 * units] -= 1.0
    return bias


def _half(a, part, negate=False):
    """Rows (or entries) `part` of a `[2D, ...]` highway tensor: 0 the
    transform, 1 the gate `g` on the input, whose carry is ours with the
    sign flipped (`g x + (1 - g) f = c f + (1 - c) x`, `c = 1 - g =
    sigmoid(-(x W_g + b_g))`)."""
    value = np.split(a, 2, axis=0)[part]
    value = value.T if value.ndim == 2 else value
    return np.ascontiguousarray(-value if negate else value)


@dataclasses.dataclass(frozen=True)
class TorchPort:
    """One table row: a Keras variable (or a direction slice) <- a tensor."""

    keras_variable: object
    file: str
    key: str
    hook: object = None
    direction: int = None


def weight_table(bilm):
    """`[TorchPort]` for every weight of an ELMoForManyLangs `BiLM`."""
    cnn, te = bilm.char_cnn, TOKEN_EMBEDDER
    table = [
        TorchPort(cnn.char_embeddings, te, "char_emb_layer.embedding.weight")
    ]
    if bilm.word_embedding is not None:
        table.append(
            TorchPort(
                bilm.word_embedding.embeddings,
                te,
                "word_emb_layer.embedding.weight",
            )
        )
    for i, (kernel, bias) in enumerate(zip(cnn.kernels, cnn.biases)):
        table.append(TorchPort(kernel, te, f"convolutions.{i}.weight", _conv))
        table.append(TorchPort(bias, te, f"convolutions.{i}.bias"))
    for k, block in enumerate(bilm.highway.blocks):
        key = f"highways._layers.{k}"
        for suffix, name in (("weight", "kernel"), ("bias", "bias")):
            table.append(
                TorchPort(
                    block[f"transform_{name}"],
                    te,
                    f"{key}.{suffix}",
                    lambda a: _half(a, 0),
                )
            )
            table.append(
                TorchPort(
                    block[f"carry_{name}"],
                    te,
                    f"{key}.{suffix}",
                    lambda a: _half(a, 1, negate=True),
                )
            )
    dense = bilm.token_projection
    table.append(TorchPort(dense.kernel, te, "projection.weight", _transpose))
    table.append(TorchPort(dense.bias, te, "projection.bias"))
    lstm = bilm.bilstm
    for layer in range(bilm.config.num_layers):
        for d, side in enumerate(("forward", "backward")):
            cell = f"{side}_layer_{layer}"
            for variable, key, hook in (
                (lstm.kernels, "input_linearity.weight", _lstm_kernel),
                (
                    lstm.recurrent_kernels,
                    "state_linearity.weight",
                    _lstm_kernel,
                ),
                (lstm.biases, "state_linearity.bias", _lstm_bias),
                (
                    lstm.projection_kernels,
                    "state_projection.weight",
                    _transpose,
                ),
            ):
                table.append(
                    TorchPort(
                        variable[layer], ENCODER, f"{cell}.{key}", hook, d
                    )
                )
    return table


def load_weights(bilm, model):
    """Assigns a `FolderModel`'s tensors to `bilm` (built from its
    `config_fields`). Every tensor is checked first (present, the shape
    the model expects after its hook, finite); nothing is assigned until
    all are, and every tensor of the two files must be used."""
    files = {TOKEN_EMBEDDER: model.token_embedder, ENCODER: model.encoder}
    used = {name: set() for name in files}
    values = []
    for port in weight_table(bilm):
        label = f"{os.path.join(model.folder, port.file)!r}, {port.key!r}"
        if port.key not in files[port.file]:
            raise ValueError(f"ELMoForManyLangs tensor {label} is missing.")
        used[port.file].add(port.key)
        # In the variable's precision: a float64 model's `b - 1` (the LSTM
        # bias hook) is then exact, not rounded to float32 first.
        precision = np.dtype(port.keras_variable.dtype)
        if precision not in (np.float32, np.float64):
            precision = np.float32
        array = np.asarray(files[port.file][port.key], precision)
        if port.hook is not None:
            array = port.hook(array)
        expected = tuple(port.keras_variable.shape)
        if port.direction is not None:
            expected = expected[1:]
        if tuple(array.shape) != expected:
            raise ValueError(
                f"ELMoForManyLangs tensor {label}: expected shape "
                f"{expected} (from the architecture), found "
                f"{tuple(array.shape)} after its layout change."
            )
        if not np.all(np.isfinite(array)):
            raise ValueError(f"ELMoForManyLangs tensor {label} is not finite.")
        values.append((port, array))
    for name, state in files.items():
        extra = sorted(set(state) - used[name])
        if extra:
            raise ValueError(
                f"{os.path.join(model.folder, name)!r} holds tensors this "
                f"converter does not map: {extra[:5]}."
            )
    for port, array in values:
        variable = port.keras_variable
        if port.direction is None:
            variable.assign(array)
        else:
            value = np.array(variable.numpy())
            value[port.direction] = array
            variable.assign(value)
