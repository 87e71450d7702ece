"""The training optimizer: bilm-tf's Adagrad or any Keras optimizer."""

import keras

from keras_elmo.training.sparse_adagrad import SparseAdagrad


def make_optimizer(name, learning_rate):
    """bilm-tf's Adagrad (accumulator 1.0) or any Keras optimizer by name.

    `"adagrad"` is `SparseAdagrad`: the softmax's row gradients update
    only their rows, as in bilm-tf. Clipping is done by the trainer on the
    all-reduced gradient, so the optimizer itself must not clip.
    """
    if name == "adagrad":
        return SparseAdagrad(
            learning_rate=learning_rate, initial_accumulator_value=1.0
        )
    optimizer = keras.optimizers.get(
        {"class_name": name, "config": {"learning_rate": learning_rate}}
    )
    return optimizer
