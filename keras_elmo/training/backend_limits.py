"""Which training settings need the TensorFlow trainer, by name.

`keras_elmo.training.trainer.Trainer` (TensorFlow) runs every setting;
`NeutralTrainer` (JAX, PyTorch) runs the default recipe: one process, float32,
full or sampled softmax with replacement, any Keras optimizer (bilm-tf's
Adagrad as dense updates, the same values), validation with the plateau
schedule and early stopping, and `init_from`. A setting that needs
`tf.distribute`, TensorFlow's loss scaling or its without-replacement
sampler is refused here, naming the setting and
the backend, before anything is built or written.
"""

import os

# Backends `NeutralTrainer` trains on (`jax.value_and_grad` / torch autograd).
NEUTRAL_TRAINING_BACKENDS = ("jax", "torch")


def training_refusals(config, backend):
    """The reasons `config` cannot train on `backend` ([]: it can).

    Args:
        config: `TrainingConfig`.
        backend: str, the Keras backend (`keras.config.backend()`).
    """
    if backend == "tensorflow":
        return []
    needs = f"needs the TensorFlow backend; received KERAS_BACKEND={backend}"
    if backend not in NEUTRAL_TRAINING_BACKENDS:
        return [
            "training runs on the tensorflow, jax and torch backends; "
            f"received KERAS_BACKEND={backend}"
        ]
    found = []
    if config.strategy in ("mirrored", "multi_worker"):
        found.append(
            f"`strategy` {needs} (`strategy={config.strategy}` is a "
            "tf.distribute strategy; on JAX one process uses "
            "keras.distribution.DataParallel over its local devices; on "
            "torch, one device)"
        )
    elif config.strategy == "auto" and os.environ.get("TF_CONFIG"):
        found.append(
            f"multi-worker training (TF_CONFIG is set) {needs}; unset "
            "TF_CONFIG to train in this process alone"
        )
    if config.mixed_precision:
        found.append(
            f"`mixed_precision` {needs} (`mixed_precision="
            f"{config.mixed_precision}`: float16 loss scaling and the "
            "mixed policies are tested there only)"
        )
    if config.num_sampled and config.sampler == "unique":
        found.append(
            f"`sampler` {needs} (`sampler=unique` draws negatives without "
            "replacement, a dynamic-shape loop); pass `sampler=replacement` "
            "for the sampled softmax with replacement"
        )
    return found


def check_training_backend(config, backend):
    """Raises `ValueError` listing every refusal of `training_refusals`."""
    found = training_refusals(config, backend)
    if found:
        raise ValueError("; ".join(found) + ".")
