"""Writes the JAX backend's outputs to `.npz` (`model_outputs.main`).

Run by `jax_parity_test.py` in a subprocess with `KERAS_BACKEND=jax`
(the backend is fixed when keras is imported). What it saves is listed
in `model_outputs.py`; the gradients of `ElmoLayer(trainable_bilm=True)`
come from `jax.grad` of the layer's `stateless_call` (the padded
`ops.scan` recurrence differentiated by JAX). Usage:

    KERAS_BACKEND=jax python tests/backends/jax_outputs.py OUT.npz \
        WORK tiny=/tmp/tiny_options.json,/tmp/tiny_weights.hdf5 ...

(`WORK` holds the test's `tensorflow.keras`; files are written there.)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

from tests.backends import model_outputs  # noqa: E402


def jax_gradients(elmo, ids, probe):
    """`d sum(elmo(ids) * probe) / d w` by `jax.grad`, jit-compiled."""
    import jax
    import jax.numpy as jnp

    trainable = [v.value for v in elmo.trainable_variables]
    non_trainable = [v.value for v in elmo.non_trainable_variables]

    def loss(values):
        mixed, _ = elmo.stateless_call(values, non_trainable, ids)
        return jnp.sum(mixed * probe)

    return jax.jit(jax.grad(loss))(trainable)


if __name__ == "__main__":
    model_outputs.main(sys.argv[1:], jax_gradients)
