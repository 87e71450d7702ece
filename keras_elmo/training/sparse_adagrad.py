"""`SparseAdagrad`: Adagrad that updates only the rows a gradient touches.

`make_optimizer` builds the training optimizer: this one (bilm-tf's
Adagrad) or any Keras optimizer by name.
"""

import keras
import tensorflow as tf

from keras_elmo.training.steps import summed_rows


@keras.saving.register_keras_serializable(package="keras_elmo")
class SparseAdagrad(keras.optimizers.Adagrad):
    """`keras.optimizers.Adagrad`, with row updates for row gradients.

    For a dense gradient `g` of a variable `w` with accumulator `a`, this
    is Keras's Adagrad:

        a <- a + g^2
        w <- w - lr g / sqrt(a + epsilon)

    A `tf.IndexedSlices` gradient (the softmax's `[V, D]` weights and `[V]`
    biases under sampled softmax: only the label and candidate rows have
    one) is applied to those rows alone, as bilm-tf's TF1 Adagrad does.
    Values at repeated indices are first summed (that row of the dense
    gradient), then the same two updates run on the touched rows by
    scatter ops. Where a dense update sees `g = 0` it leaves the row as is
    (`a + 0`, `w - 0`), so both give the same variables; the sparse one
    costs O(rows touched x D) instead of O(V x D), which matters at
    bilm-tf's 793k-word vocabulary (406M weights and as many accumulators
    read and written every step; `benchmarks/optimizer_update.py` times
    both).

    Args: those of `keras.optimizers.Adagrad`.
    """

    def update_step(self, gradient, variable, learning_rate):
        if not isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        lr = tf.cast(learning_rate, variable.dtype)
        gradient = summed_rows(gradient)
        rows = gradient.indices
        values = tf.cast(gradient.values, variable.dtype)
        accumulator = self._accumulators[self._get_variable_index(variable)]
        self.assign_add(
            accumulator,
            tf.IndexedSlices(tf.square(values), rows, gradient.dense_shape),
        )
        # A gather from the tf.Variable reads only these rows.
        accumulated = tf.gather(accumulator.value, rows)
        step = tf.math.divide(lr * values, tf.sqrt(accumulated + self.epsilon))
        self.assign_sub(
            variable, tf.IndexedSlices(step, rows, gradient.dense_shape)
        )


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
