"""`ScalarMix`: the task-specific softmax-weighted sum of biLM layers."""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.utils import check_positive_int
from keras_elmo.utils import initializer_configs

# AllenNLP and bilm-tf both use this epsilon inside the square root.
_LAYER_NORM_EPSILON = 1e-12


@keras_elmo_export("keras_elmo.layers.ScalarMix")
class ScalarMix(keras.layers.Layer):
    """Mixes `num_layers` tensors with softmax-normalised scalar weights.

    Computes the ELMo combination of Peters et al. (2018), eq. (1):

    `mixture = gamma * sum_k softmax(s)_k * h_k`

    where `s` (`scalar_parameters`, shape `[num_layers]`) and `gamma`
    (a scalar) are learned, and `h_k` are the layer representations. The
    semantics are those of AllenNLP's `ScalarMix` and bilm-tf's
    `weight_layers`, so pretrained task weights carry over unchanged.

    With `do_layer_norm=True` each `h_k` is first normalised with a single
    mean and variance computed over every non-masked element of `h_k` in
    the whole batch (all positions and all features), exactly as AllenNLP
    and bilm-tf do:
    `mean = sum(h * m) / N`, `var = sum(((h - mean) * m) ** 2) / N`,
    `h_norm = (h - mean) / sqrt(var + 1e-12)`, with `N = sum(m) * D`.
    Because the statistics span the batch, outputs then depend on the other
    sentences in the batch; leave it off (the default) for batch-independent
    outputs.

    Args:
        num_layers: int. The number of tensors to mix (`L + 1` for an
            `L`-layer biLM, counting the token layer).
        do_layer_norm: bool. Whether to normalise each tensor before
            mixing, as described above. Defaults to `False`.
        scalar_mix_parameters: list of floats or None. Fixed un-normalised
            weights `s`, one per layer (e.g. `[-9e10, 1, -9e10]` selects the
            middle layer). When given, neither `s` nor `gamma` is trainable,
            as in AllenNLP's `Elmo(scalar_mix_parameters=...)`. Defaults to
            `None` (both are trained).
        initial_scalar_parameters: list of floats or None. Initial values of
            the trainable `s`. Defaults to `None` (zeros, i.e. the plain
            average). Cannot be combined with `scalar_mix_parameters`.
        l2_coef: float. Strength of the L2 penalty `l2_coef * sum(s ** 2)`
            on the un-normalised weights (bilm-tf's form), reported in
            `layer.losses` and added to the loss by `fit`. It pulls
            `softmax(s)` toward the uniform average of the layers. Only
            applies while `s` is trainable. Defaults to `0.0` (no penalty).
        gamma_initializer: initializer or float. Initial value of `gamma`.
            Defaults to `"ones"` (`gamma = 1`).
        **kwargs: other keyword arguments passed to `keras.layers.Layer`,
            including `name`, `dtype` and `trainable`.

    Call arguments:
        inputs: a list of `num_layers` float tensors of the same shape
            `[B, T, D]` (any shape `[B, ..., D]` works), or one stacked
            tensor `[B, num_layers, T, D]`.
        mask: optional bool tensor `[B, T]` (the layer shape without its
            feature axis), or a list of such masks, one per input; only the
            first is used. Only needed with `do_layer_norm=True`; without a
            mask every position counts as real.

    Returns:
        A float tensor `[B, T, D]` in the compute dtype. Under a
        mixed-precision policy (e.g. `mixed_bfloat16`) the softmax, the
        layer norm, the weighted sum and `gamma` are all float32; the
        result is rounded to the compute dtype once, at the end.

    Masking: this layer supports masking. Masked positions are excluded
    from the layer-norm statistics (padded positions are still normalised
    and mixed, so they hold finite values), and the output carries the
    mask of the first input tensor.

    Example:

    >>> layers = [np.random.rand(2, 5, 8).astype("float32")] * 3
    >>> mix = keras_elmo.layers.ScalarMix(num_layers=3)
    >>> mix(layers).shape
    TensorShape([2, 5, 8])

    Reference:
        - [Peters et al., 2018](https://arxiv.org/abs/1802.05365)
    """

    def __init__(
        self,
        num_layers,
        do_layer_norm=False,
        scalar_mix_parameters=None,
        initial_scalar_parameters=None,
        l2_coef=0.0,
        gamma_initializer="ones",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("num_layers", num_layers)
        if scalar_mix_parameters is not None and (
            initial_scalar_parameters is not None
        ):
            raise ValueError(
                "Arguments `scalar_mix_parameters` (fixed weights) and "
                "`initial_scalar_parameters` (trainable initial weights) "
                "are mutually exclusive, received "
                f"scalar_mix_parameters={scalar_mix_parameters} and "
                f"initial_scalar_parameters={initial_scalar_parameters}."
            )
        if l2_coef is None or float(l2_coef) < 0:
            raise ValueError(
                "Received an invalid value for argument `l2_coef`, "
                f"expected a non-negative float, got {l2_coef}."
            )
        self.num_layers = int(num_layers)
        self.do_layer_norm = bool(do_layer_norm)
        self.scalar_mix_parameters = self._check_parameters(
            "scalar_mix_parameters", scalar_mix_parameters
        )
        self.initial_scalar_parameters = self._check_parameters(
            "initial_scalar_parameters", initial_scalar_parameters
        )
        self.l2_coef = float(l2_coef)
        if isinstance(gamma_initializer, (int, float)):
            gamma_initializer = keras.initializers.Constant(gamma_initializer)
        self.gamma_initializer = keras.initializers.get(gamma_initializer)
        self.supports_masking = True

    def _check_parameters(self, name, values):
        if values is None:
            return None
        values = [float(v) for v in values]
        if len(values) != self.num_layers:
            raise ValueError(
                f"Argument `{name}` must hold one float per layer, expected "
                f"length num_layers={self.num_layers}, got {len(values)} "
                f"values: {values}."
            )
        return values

    def build(self, input_shape):
        fixed = self.scalar_mix_parameters is not None
        values = self.scalar_mix_parameters or self.initial_scalar_parameters
        values = values or [0.0] * self.num_layers

        def scalar_initializer(shape, dtype=None):
            return ops.convert_to_tensor(values, dtype=dtype)

        # The weights stay float32 under mixed precision (`autocast=False`):
        # the softmax over a few scalars is cheap and fp16 would round it.
        self.scalar_parameters = self.add_weight(
            name="scalar_parameters",
            shape=(self.num_layers,),
            initializer=scalar_initializer,
            trainable=not fixed,
            regularizer=(
                keras.regularizers.L2(self.l2_coef) if self.l2_coef else None
            ),
            autocast=False,
        )
        self.gamma = self.add_weight(
            name="gamma",
            shape=(),
            initializer=self.gamma_initializer,
            trainable=not fixed,
            autocast=False,
        )
        self.built = True

    def _split_layers(self, inputs):
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != self.num_layers:
                raise ValueError(
                    f"ScalarMix expected a list of num_layers="
                    f"{self.num_layers} tensors, got {len(inputs)} tensors."
                )
            return list(inputs)
        if len(inputs.shape) < 3:
            raise ValueError(
                "ScalarMix expected a list of tensors or one stacked tensor "
                "of shape [B, num_layers, ..., D], got a tensor of shape "
                f"{inputs.shape}."
            )
        if inputs.shape[1] is not None and inputs.shape[1] != self.num_layers:
            raise ValueError(
                f"ScalarMix expected a stacked tensor with num_layers="
                f"{self.num_layers} on axis 1, got shape {inputs.shape}."
            )
        return [inputs[:, k] for k in range(self.num_layers)]

    def _layer_norm(self, tensor, broadcast_mask, num_elements):
        # Statistics in float32, so the 1e-12 epsilon survives fp16 inputs.
        tensor = ops.cast(tensor, "float32")
        mean = ops.sum(tensor * broadcast_mask) / num_elements
        centered = tensor - mean
        variance = ops.sum(ops.square(centered * broadcast_mask))
        variance = variance / num_elements
        return centered / ops.sqrt(variance + _LAYER_NORM_EPSILON)

    def call(self, inputs, mask=None):
        tensors = self._split_layers(inputs)
        mask = _first_mask(mask)
        weights = ops.softmax(ops.cast(self.scalar_parameters, "float32"))
        gamma = ops.cast(self.gamma, "float32")
        if self.do_layer_norm:
            if mask is None:
                mask = ops.ones(ops.shape(tensors[0])[:-1], dtype="bool")
            mask_float = ops.cast(mask, "float32")
            broadcast_mask = ops.expand_dims(mask_float, -1)
            depth = ops.cast(ops.shape(tensors[0])[-1], "float32")
            # AllenNLP divides by zero on an all-padding batch; we return
            # finite values instead.
            num_elements = ops.maximum(ops.sum(mask_float) * depth, 1.0)
        mixture = None
        for k, tensor in enumerate(tensors):
            if self.do_layer_norm:
                tensor = self._layer_norm(tensor, broadcast_mask, num_elements)
            # Accumulated in float32 whatever the policy (a bfloat16 sum of
            # L + 1 terms would round at every step); rounded once at the end.
            piece = weights[k] * ops.cast(tensor, "float32")
            mixture = piece if mixture is None else mixture + piece
        return ops.cast(gamma * mixture, self.compute_dtype)

    def compute_mask(self, inputs, mask=None):
        return _first_mask(mask)

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, (list, tuple)) and isinstance(
            input_shape[0], (list, tuple)
        ):
            return tuple(input_shape[0])
        input_shape = tuple(input_shape)
        return input_shape[:1] + input_shape[2:]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                "do_layer_norm": self.do_layer_norm,
                "scalar_mix_parameters": self.scalar_mix_parameters,
                "initial_scalar_parameters": self.initial_scalar_parameters,
                "l2_coef": self.l2_coef,
                **initializer_configs(self, "gamma_initializer"),
            }
        )
        return config


def _first_mask(mask):
    """Returns the first non-`None` mask of a list of masks, or `mask`."""
    if isinstance(mask, (list, tuple)):
        return next((m for m in mask if m is not None), None)
    return mask
