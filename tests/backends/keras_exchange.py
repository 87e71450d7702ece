"""Loads a `.keras` file under the active backend, calls it, saves it again.

Run by `torch_parity_test.py` under `KERAS_BACKEND=jax` on the file
saved under PyTorch, then under `KERAS_BACKEND=torch` on the file this
wrote under JAX: the JAX <-> PyTorch exchange (TensorFlow <-> each is in
`model_outputs.py`). It loads `IN.keras` with `compile=False` (a file
saved under PyTorch names torch's Adam), writes its outputs on the
`tiny` fixture's ids to `OUT.npz` (`outputs`, and `backend`) and saves
the loaded model, from this backend's variables, to `OUT.keras`. Usage:

    KERAS_BACKEND=jax python tests/backends/keras_exchange.py \
        IN.keras OUT.keras OUT.npz
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.backends.backend_outputs import fixture_ids_and_labels  # noqa: E402
from tests.backends.backend_outputs import to_numpy  # noqa: E402


def main(argv):
    source, target, path = argv
    ids, _ = fixture_ids_and_labels("tiny")
    model = keras.saving.load_model(source, compile=False)
    outputs = to_numpy(model(ids))
    model.save(target)
    np.savez(path, outputs=outputs, backend=np.array(keras.config.backend()))


if __name__ == "__main__":
    main(sys.argv[1:])
