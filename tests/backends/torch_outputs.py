"""Writes the PyTorch backend's outputs to `.npz` (`model_outputs.main`).

Run by `torch_parity_test.py` in a subprocess with `KERAS_BACKEND=torch`
(the backend is fixed when keras is imported). What it saves is listed
in `model_outputs.py`; the gradients of `ElmoLayer(trainable_bilm=True)`
come from torch autograd (`torch.autograd.grad` on the variables'
tensors). Usage:

    KERAS_BACKEND=torch python tests/backends/torch_outputs.py OUT.npz \
        WORK tiny=/tmp/tiny_options.json,/tmp/tiny_weights.hdf5 ...

(`WORK` holds the test's `tensorflow.keras`; files are written there.)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import keras  # noqa: E402

from tests.backends import model_outputs  # noqa: E402


def torch_gradients(elmo, ids, probe):
    """`d sum(elmo(ids) * probe) / d w` by torch autograd."""
    import torch

    loss = keras.ops.sum(elmo(ids) * keras.ops.convert_to_tensor(probe))
    return torch.autograd.grad(
        loss, [v.value for v in elmo.trainable_variables]
    )


if __name__ == "__main__":
    model_outputs.main(sys.argv[1:], torch_gradients)
