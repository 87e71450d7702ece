"""`Highway`: highway layers with the bilm-tf carry-gate convention."""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.utils import clone_initializer
from keras_elmo.utils import initializer_configs
from keras_elmo.utils.validation import check_int_at_least


@keras_elmo_export("keras_elmo.layers.Highway")
class Highway(keras.layers.Layer):
    """A stack of highway layers (Srivastava et al. 2015), bilm-tf convention.

    Each of the `num_layers` blocks computes, for `x` of size `D`:

        g = sigmoid(x W_carry + b_carry)            # the "carry" gate
        y = g * relu(x W_transform + b_transform) + (1 - g) * x

    This is bilm-tf's naming (its "carry" gate multiplies the transform),
    so published `W_carry`/`b_carry` load without a sign flip (AllenNLP
    stores `-W_carry` and uses `1 - g`; the two are the same function).

    Args:
        num_layers: int. Number of highway blocks (0 = identity).
        kernel_initializer: initializer for both kernels; the default is
            bilm-tf's `N(0, 1/D)`.
        carry_bias_initializer: initializer for `b_carry`. The default
            -2.0 (bilm-tf) makes `g` small at first, so each block starts
            close to the identity and gradients pass through.
        transform_bias_initializer: initializer for `b_transform`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: float tensor `[..., D]`.

    Returns:
        float tensor `[..., D]`.

    Masking: position-wise; passes an incoming mask through unchanged.

    Example:

    >>> layer = keras_elmo.layers.Highway(num_layers=2)
    >>> layer(np.ones((2, 3, 8), "float32")).shape
    TensorShape([2, 3, 8])

    Reference:
        Srivastava et al. 2015, "Training Very Deep Networks".
    """

    def __init__(
        self,
        num_layers=1,
        kernel_initializer=None,
        carry_bias_initializer=None,
        transform_bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_int_at_least(
            "num_layers", num_layers, 0, "a non-negative integer"
        )
        self.num_layers = num_layers
        self.kernel_initializer = keras.initializers.get(
            kernel_initializer
            or keras.initializers.VarianceScaling(
                scale=1.0, mode="fan_in", distribution="untruncated_normal"
            )
        )
        self.carry_bias_initializer = keras.initializers.get(
            carry_bias_initializer or keras.initializers.Constant(-2.0)
        )
        self.transform_bias_initializer = keras.initializers.get(
            transform_bias_initializer
        )
        self.supports_masking = True

    def build(self, input_shape):
        dim = input_shape[-1]
        self.blocks = []
        gates = (
            ("carry", self.carry_bias_initializer),
            ("transform", self.transform_bias_initializer),
        )
        for k in range(self.num_layers):
            block = {}
            for gate, bias_initializer in gates:
                block[f"{gate}_kernel"] = self.add_weight(
                    name=f"{gate}_kernel_{k}",
                    shape=(dim, dim),
                    initializer=clone_initializer(self.kernel_initializer),
                )
                block[f"{gate}_bias"] = self.add_weight(
                    name=f"{gate}_bias_{k}",
                    shape=(dim,),
                    initializer=bias_initializer,
                )
            self.blocks.append(block)

    def call(self, inputs):
        x = inputs
        for block in self.blocks:
            carry = ops.sigmoid(
                ops.matmul(x, block["carry_kernel"]) + block["carry_bias"]
            )
            transform = ops.relu(
                ops.matmul(x, block["transform_kernel"])
                + block["transform_bias"]
            )
            x = carry * transform + (1.0 - carry) * x
        return x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                **initializer_configs(
                    self,
                    "kernel_initializer",
                    "carry_bias_initializer",
                    "transform_bias_initializer",
                ),
            }
        )
        return config
