"""`ResidualBiLSTM`: ELMo's stacked forward/backward LSTMs with projection."""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.ops import recurrences
from keras_elmo.ops.bilstm_layouts import PackedLayout
from keras_elmo.ops.bilstm_layouts import PaddedLayout
from keras_elmo.ops.recurrences import lstm_recurrence
from keras_elmo.ops.recurrences import neutral_lstm_recurrence
from keras_elmo.utils import check_positive_int
from keras_elmo.utils import clone_initializer
from keras_elmo.utils import initializer_configs
from keras_elmo.utils import is_tensorflow


@keras_elmo_export("keras_elmo.layers.ResidualBiLSTM")
class ResidualBiLSTM(keras.layers.Layer):
    """ELMo's biLSTM: forward and backward stacks of projected LSTM cells.

    Each direction runs `num_layers` LSTM layers with a projection (Sak et
    al. 2014) and clipping, as bilm-tf's `LSTMCell(num_proj=P,
    cell_clip=c, proj_clip=p)` and AllenNLP's `LstmCellWithProjection`.
    At step `t`, with input `x_t` (`[P]`), state `h` (`[P]`), cell `c`:

        z = x_t W + h U + b                       # [4H], blocks i, j, f, o
        c = clip(sig(i) * tanh(j) + sig(f + forget_bias) * c, +-cell_clip)
        h = clip((sig(o) * tanh(c)) W_proj, +-projection_clip)   # [P]

    The clipped `h` is both the output and the recurrent state. `b` holds
    the bias as bilm-tf stores it; `forget_bias` (1.0) is added at run time
    exactly as TensorFlow's `LSTMCell` does, so a published file round
    trips bit for bit. The backward stack reads each sentence reversed over
    its own length (`reverse_sequence`), so padding never leaks in. With
    `use_skip_connections`, layers 2..L add their input to their output.

    For speed, the input products `x W + b` of all steps are one matmul
    per layer, both directions advance together in one loop, and each step
    is one batched matmul for the gates plus one for the projection. The
    loop (`keras_elmo.ops.recurrences`) has a hand-written gradient
    that costs about twice the forward pass, as the FLOPs do. Under a
    mixed-precision policy the gates and cells are computed in float32
    (under a float64 one in float64: `lstm_cell.state_dtype`).
    Only real tokens are computed (`keras_elmo.ops.recurrences`):
    the rows are sorted by length and packed time-major, so each step
    multiplies only the rows still running, and the input products skip
    padding too; at inference the first layer's input products are
    computed once per distinct token (`keras_elmo.ops.
    distinct_input_products`: equal inputs, equal products). Setting
    `packed = False` runs the padded loop instead (same outputs within
    float rounding, 1e-6), as XLA-compiled calls do.
    Both layouts are in `keras_elmo.ops.bilstm_layouts`; this layer owns
    the weights and the per-layer steps (dropout, recurrence, residual).
    On another backend (JAX, PyTorch), the padded layout runs a
    `keras.ops.scan` of the same cell with the backend's autodiff
    (`lstm_recurrence.neutral_lstm_recurrence`).

    Args:
        units: int. `H`, the LSTM memory cell size.
        projection_dim: int. `P`, the projected output and state size; the
            input must also be `P` wide.
        num_layers: int. `L`, layers per direction.
        cell_clip: float or None. Clip value for the memory cell.
        projection_clip: float or None. Clip value for the projection.
        use_skip_connections: bool. Residual connections from layer 2 on.
        forget_bias: float. Added to the forget gate at run time.
        dropout: float. Dropout rate on each layer's input during training
            (bilm-tf's `DropoutWrapper(input_keep_prob)`; the residual adds
            the dropped input, as there).
        seed: int or None. Seed of the dropout masks.
        kernel_initializer: initializer for the input kernels `W`.
        recurrent_initializer: initializer for the recurrent kernels `U`.
        projection_initializer: initializer for `W_proj`.
        bias_initializer: initializer for `b`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: float tensor `[B, T, P]`.
        mask: bool tensor `[B, T]`, True for real steps (right-padded).
            Without a mask every step is real.
        initial_state: optional pair `(h0, c0)` of float tensors
            `[L, 2, B, P]` and `[L, 2, B, H]` (layer, direction, row):
            the states each row starts from (zeros when omitted). For the
            backward direction, the state "before" the last real token.
        return_state: bool. Also return the final states.
        training: bool. Enables dropout.

    Returns:
        A list of `L` tensors `[B, T, 2P]`: layer `l`'s forward and
        backward outputs concatenated (including the residual), zero at
        padded steps. With `return_state=True`, a tuple `(outputs, (h, c))`
        with the states each row holds after its last real step (for the
        backward direction: after position 0), shaped as `initial_state`.

    Masking: consumes the mask (for lengths) and returns it unchanged for
    every output.

    Reference:
        Peters et al. 2018; Sak et al. 2014, "Long short-term memory
        recurrent neural network architectures for large scale acoustic
        modeling"; Jozefowicz et al. 2016, "Exploring the limits of
        language modeling".
    """

    def __init__(
        self,
        units,
        projection_dim,
        num_layers=2,
        cell_clip=None,
        projection_clip=None,
        use_skip_connections=True,
        forget_bias=1.0,
        dropout=0.0,
        seed=None,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        projection_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        check_positive_int("projection_dim", projection_dim)
        check_positive_int("num_layers", num_layers)
        for name, value in (
            ("cell_clip", cell_clip),
            ("projection_clip", projection_clip),
        ):
            if value is not None and not value > 0:
                raise ValueError(
                    f"Received an invalid value for argument `{name}`, "
                    f"expected None or a positive float, got {value!r}."
                )
        self.units = units
        self.projection_dim = projection_dim
        self.num_layers = num_layers
        self.cell_clip = None if cell_clip is None else float(cell_clip)
        self.projection_clip = (
            None if projection_clip is None else float(projection_clip)
        )
        self.use_skip_connections = bool(use_skip_connections)
        self.forget_bias = float(forget_bias)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(
                "Received an invalid value for argument `dropout`, expected "
                f"a float in [0, 1), got {dropout!r}."
            )
        self.dropout = float(dropout)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(
            recurrent_initializer
        )
        self.projection_initializer = keras.initializers.get(
            projection_initializer
        )
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True
        # Run over real tokens only (`packed_recurrence`); False runs the
        # padded loop, for comparisons. Same outputs either way.
        self.packed = True

    def build(self, inputs_shape):
        if inputs_shape[-1] != self.projection_dim:
            raise ValueError(
                "ResidualBiLSTM expects inputs of width `projection_dim`="
                f"{self.projection_dim}, received input shape {inputs_shape}."
            )
        units, proj = self.units, self.projection_dim
        self.kernels, self.recurrent_kernels = [], []
        self.biases, self.projection_kernels = [], []
        for layer in range(self.num_layers):
            # One variable per layer holds both directions: [2, ...].
            self.kernels.append(
                self._stacked_weight(
                    f"kernel_{layer}",
                    (proj, 4 * units),
                    self.kernel_initializer,
                )
            )
            self.recurrent_kernels.append(
                self._stacked_weight(
                    f"recurrent_kernel_{layer}",
                    (proj, 4 * units),
                    self.recurrent_initializer,
                )
            )
            self.biases.append(
                self._stacked_weight(
                    f"bias_{layer}", (4 * units,), self.bias_initializer
                )
            )
            self.projection_kernels.append(
                self._stacked_weight(
                    f"projection_kernel_{layer}",
                    (units, proj),
                    self.projection_initializer,
                )
            )

    def _stacked_weight(self, name, shape, initializer):
        """A `[2, *shape]` weight, each direction initialised on its own."""

        def init(full_shape, dtype=None):
            return ops.stack(
                [
                    clone_initializer(initializer)(shape, dtype=dtype)
                    for _ in range(2)
                ]
            )

        return self.add_weight(name=name, shape=(2,) + shape, initializer=init)

    def call(
        self,
        inputs,
        mask=None,
        initial_state=None,
        return_state=False,
        training=None,
    ):
        batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        if mask is None:
            mask = ops.ones((batch, steps), dtype="bool")
        lengths = ops.sum(ops.cast(mask, "int32"), axis=1)
        if not is_tensorflow():
            # JAX, torch: the padded keras.ops scan, autodiff for its gradient.
            layout = PaddedLayout(
                inputs, lengths, self.compute_dtype, neutral_lstm_recurrence
            )
        elif self.packed and recurrences.available():
            layout = PackedLayout(inputs, lengths, self.compute_dtype)
        else:
            layout = PaddedLayout(
                inputs, lengths, self.compute_dtype, lstm_recurrence
            )
        clips = (self.cell_clip, self.projection_clip)
        layer_input = layout.inputs
        outputs, final_h, final_c = [], [], []
        for layer in range(self.num_layers):
            state = None
            if initial_state is not None:
                state = layout.initial_state(
                    initial_state[0][layer], initial_state[1][layer]
                )
            if training and self.dropout > 0:
                layer_input = keras.random.dropout(
                    layer_input, self.dropout, seed=self.seed_generator
                )
            sequence, h, c = layout.run(
                layer_input,
                self._layer_weights(layer),
                state,
                clips,
                bool(training),
                tokens=layer == 0 and not training,
            )
            if layer > 0 and self.use_skip_connections:
                sequence = sequence + layer_input
            layer_input, output = layout.finish(sequence)
            outputs.append(output)
            final_h.append(layout.final_state(h))
            final_c.append(layout.final_state(c))
        if return_state:
            return outputs, (ops.stack(final_h), ops.stack(final_c))
        return outputs

    def _layer_weights(self, layer):
        """`(W, U, W_proj, b + forget bias)` of one layer in the compute
        dtype, stacked over directions."""
        units = self.units
        forget = ops.concatenate(
            [
                ops.zeros((2 * units,), self.compute_dtype),
                ops.full((units,), self.forget_bias, self.compute_dtype),
                ops.zeros((units,), self.compute_dtype),
            ]
        )
        return (
            ops.cast(self.kernels[layer], self.compute_dtype),
            ops.cast(self.recurrent_kernels[layer], self.compute_dtype),
            ops.cast(self.projection_kernels[layer], self.compute_dtype),
            ops.cast(self.biases[layer], self.compute_dtype) + forget,
        )

    def compute_mask(self, inputs, mask=None):
        return [mask] * self.num_layers

    def compute_output_shape(self, inputs_shape):
        shape = tuple(inputs_shape[:-1]) + (2 * self.projection_dim,)
        return [shape] * self.num_layers

    def compute_output_spec(self, inputs, return_state=False, **kwargs):
        dtype = self.compute_dtype
        outputs = [
            keras.KerasTensor(shape, dtype=dtype)
            for shape in self.compute_output_shape(inputs.shape)
        ]
        if not return_state:
            return outputs
        batch = inputs.shape[0]
        layers = (self.num_layers, 2, batch)
        return outputs, (
            keras.KerasTensor(layers + (self.projection_dim,), dtype=dtype),
            keras.KerasTensor(layers + (self.units,), dtype=dtype),
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "projection_dim": self.projection_dim,
                "num_layers": self.num_layers,
                "cell_clip": self.cell_clip,
                "projection_clip": self.projection_clip,
                "use_skip_connections": self.use_skip_connections,
                "forget_bias": self.forget_bias,
                "dropout": self.dropout,
                "seed": self.seed,
                **initializer_configs(
                    self,
                    "kernel_initializer",
                    "recurrent_initializer",
                    "projection_initializer",
                    "bias_initializer",
                ),
            }
        )
        return config
