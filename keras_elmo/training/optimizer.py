"""The training optimizer: bilm-tf's Adagrad or any Keras optimizer."""

import keras


def make_optimizer(name, learning_rate):
    """bilm-tf's Adagrad (accumulator 1.0) or any Keras optimizer by name.

    Clipping is done by the trainer on the all-reduced gradient, so the
    optimizer itself must not clip.
    """
    if name == "adagrad":
        return keras.optimizers.Adagrad(
            learning_rate=learning_rate, initial_accumulator_value=1.0
        )
    optimizer = keras.optimizers.get(
        {"class_name": name, "config": {"learning_rate": learning_rate}}
    )
    return optimizer
