"""`CharCNNEmbedding` and `Highway`: character ids -> token features.

`CharCNNEmbedding` embeds each character, convolves with every filter
width, max-pools over positions, then applies the activation:
char-CNN features `[B, T, sum(filters)]`. `Highway` then mixes them with
bilm-tf's carry-gate convention, `y = g * relu(x Wt + bt) + (1 - g) * x`
with `g = sigmoid(x Wc + bc)`.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab
from keras_elmo.utils import check_backend
from keras_elmo.utils import check_int_at_least
from keras_elmo.utils import clone_initializer
from keras_elmo.utils import initializer_configs
from keras_elmo.utils import is_tensorflow

_PAD_ID = char_vocab.PAD_CHAR + char_vocab.ID_OFFSET


def _is_character(flat_ids, pad_id=_PAD_ID):
    """True at the slots holding a character (BOW, a byte, EOW), not PAD
    and not the all-zero "no token" row."""
    return ops.logical_and(
        ops.greater(flat_ids, 0), ops.not_equal(flat_ids, pad_id)
    )


def _pooled_convolution(chars, pad_row, kernel, occupied, is_token, slots):
    """`max_t conv(chars, kernel)[:, t]` per token, over its own windows.

    A token's characters fill slots `0..n-1` (BOW, bytes, EOW) and PAD the
    rest, so of the `slots - w + 1` VALID windows only the first
    `m = min(max(n, 1), slots - w + 1)` can hold a character; every later
    one holds PAD only and has one value `v = conv(PAD...)` for all
    tokens. The windows that hold characters are gathered token by token
    (as the biLSTM packs real steps) into one `[sum m, w * dim]` matrix:

        y[j] = window_j . reshape(K_w, [w * dim, n_filters])
        pooled[i] = max(max_{j of token i} y[j],  v if n_i < slots - w + 1)

    (`v` only for real tokens; an all-zero "no token" row has one window
    of zero embeddings, so it pools to 0, as over all its slots). Exactly
    the VALID convolution's max, with the work of `sum_i m_i` windows
    instead of `M * (slots - w + 1)`: real words fill about 9 of the 50
    slots.

    Args:
        chars: `[M * slots, dim]`, the embedded slots, token-major.
        pad_row: `[slots, dim]`, the embedded PAD character in every slot.
        kernel: `[w, dim, n_filters]`.
        occupied: int32 `[M]`, `n` per token.
        is_token: bool `[M]`.
        slots: int, the slots per token (50).

    Returns:
        `[M, n_filters]`, before the bias.
    """
    width, dim, num = kernel.shape
    limit = slots - width + 1
    windows = tf.clip_by_value(occupied, 1, limit)  # [M]
    token = tf.repeat(tf.range(tf.size(windows)), windows)  # [sum m]
    start = tf.range(tf.size(token)) - tf.gather(
        tf.cumsum(windows, exclusive=True), token
    )
    slot = (token * slots + start)[:, None] + tf.range(width)[None, :]
    flat_kernel = ops.reshape(kernel, (width * dim, num))
    values = ops.matmul(
        ops.reshape(ops.take(chars, slot, axis=0), (-1, width * dim)),
        flat_kernel,
    )  # [sum m, n_filters]
    pooled = tf.math.segment_max(values, token)  # [M, n_filters]
    pad_value = ops.matmul(
        ops.reshape(pad_row[:width], (1, width * dim)), flat_kernel
    )
    has_pad_window = ops.logical_and(is_token, ops.less(occupied, limit))
    return ops.where(
        has_pad_window[:, None], ops.maximum(pooled, pad_value), pooled
    )


def _convolution_max(chars, kernel, slots, used=None):
    """`max_t conv(chars, kernel)[:, t]` per token, over all its windows.

    The backend-neutral path (JAX, torch): one VALID `keras.ops.conv` over
    every token's `slots` characters, then the max over the `slots - w + 1`
    positions. The same values as `_pooled_convolution` (the TensorFlow
    path, which skips the windows of PAD only) up to float rounding.

    With `used = min(slots, L + w_max)` for a static `L` >= the characters
    `n` of every token of the batch (`w_max` the widest filter), only the
    first `used` slots are convolved, and the max is the same: a token's
    windows holding a character start before `n <= L`, so they end
    before `L + w - 1 < used`; and the windows of PAD only, which all
    have one value, are kept where there are any (`n <= slots - w`), as
    the window starting at `n <= used - w` is one of them.

    Args:
        chars: `[M * slots, dim]`, the embedded slots, token-major.
        kernel: `[w, dim, n_filters]`.
        slots: int, the slots per token (50).
        used: int or None (`slots`), the leading slots convolved.

    Returns:
        `[M, n_filters]`, before the bias.
    """
    dim = kernel.shape[1]
    tokens = ops.reshape(chars, (-1, slots, dim))
    if used is not None and used < slots:
        tokens = tokens[:, :used]
    return ops.max(ops.conv(tokens, kernel, padding="valid"), axis=1)


@keras_elmo_export("keras_elmo.layers.CharCNNEmbedding")
class CharCNNEmbedding(keras.layers.Layer):
    """Character convolutions over each token, max-pooled (Kim et al. 2016).

    For a token with character ids `c_1..c_50`, each character is embedded
    (`e_k = E[c_k]`, `E[0] = 0` is the padding row), and for every filter
    width `w` with `n` filters:

        y_w = act(max_{t} (sum_{k<w} e_{t+k} K_w[k]) + b_w)     # [n]

    (a VALID cross-correlation over the 50 slots, then max over positions,
    then `act` = relu or tanh; the bias and a monotone activation commute
    with the max). The outputs of all widths are concatenated in filter
    order: `[B, T, sum(n)]`. The character table holds the 261 real rows;
    row 0 (id 0, "no token") is a constant zero and never trained.
    On TensorFlow only the windows holding characters are convolved
    (`_pooled_convolution`); on JAX and torch one VALID `keras.ops.conv` covers
    all slots (`_convolution_max`): the same values up to rounding. A
    compiled JAX training step sets `longest_token`, a static bound `L` on
    the characters (BOW, bytes, EOW) of every token of the batch, and the
    convolution then covers the first `min(50, L + w_max)` slots only:
    the same maximum (`_convolution_max`). A bound below a token's
    characters would drop its windows, so the caller computes it from
    the batch (`keras_elmo.training.neutral_trainer.static_bounds`).

    Args:
        filters: list of `(width, num_filters)` pairs.
        char_embedding_dim: int. Size of a character's embedding.
        activation: `"relu"` or `"tanh"`.
        num_characters: int. Rows of the embedding including the padding
            row (262 for UTF-8 bytes; a Unicode lexicon's rows + 1).
        pad_id: int. The (shifted) id of the padding character that fills
            a token's slots after its end-of-word marker (261 for bytes;
            a lexicon's `pad` + 1). Its embedding row is a learned row
            like any other; a token's characters must precede it.
        embeddings_initializer: initializer for the character table.
        kernel_initializer: initializer for the convolution kernels.
        bias_initializer: initializer for the convolution biases.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        char_ids: int tensor `[B, T, 50]`, shifted ids (0 = padding token).

    Returns:
        float tensor `[B, T, sum(num_filters)]`.

    Masking: produces the mask `any(char_ids > 0, axis=-1)` (`[B, T]`).
    Padding tokens still get features (of an all-padding row); mask them
    downstream.

    Example:

    >>> layer = keras_elmo.layers.CharCNNEmbedding(
    ...     filters=[(1, 4), (2, 8)], char_embedding_dim=4)
    >>> layer(keras_elmo.batch_to_ids([["a", "bc"]])).shape
    TensorShape([1, 2, 12])

    Reference:
        Kim et al. 2016, "Character-Aware Neural Language Models";
        Peters et al. 2018, "Deep contextualized word representations".
    """

    def __init__(
        self,
        filters,
        char_embedding_dim,
        activation="relu",
        num_characters=char_vocab.NUM_CHARACTERS,
        pad_id=_PAD_ID,
        embeddings_initializer="uniform",
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        filters = [tuple(int(v) for v in pair) for pair in filters]
        if not filters or any(len(p) != 2 or min(p) < 1 for p in filters):
            raise ValueError(
                "Received an invalid value for argument `filters`, expected "
                "a non-empty list of (width, num_filters) pairs, got "
                f"{filters}."
            )
        if activation not in ("relu", "tanh"):
            raise ValueError(
                "Received an invalid value for argument `activation`, "
                f"expected 'relu' or 'tanh', got {activation!r}."
            )
        if not 1 <= int(pad_id) < int(num_characters):
            raise ValueError(
                "Received an invalid value for argument `num_characters`, "
                f"expected > pad_id = {pad_id} (ids 0..{pad_id} at least), "
                f"got {num_characters!r}."
            )
        self.filters = filters
        self.char_embedding_dim = int(char_embedding_dim)
        self.activation = activation
        self.num_characters = int(num_characters)
        self.pad_id = int(pad_id)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.num_filters = sum(n for _, n in filters)
        self.supports_masking = True

    def build(self, input_shape):
        self.char_embeddings = self.add_weight(
            name="char_embeddings",
            shape=(self.num_characters - 1, self.char_embedding_dim),
            initializer=self.embeddings_initializer,
        )
        self.kernels, self.biases = [], []
        for i, (width, num) in enumerate(self.filters):
            self.kernels.append(
                self.add_weight(
                    name=f"kernel_{i}",
                    shape=(width, self.char_embedding_dim, num),
                    initializer=clone_initializer(self.kernel_initializer),
                )
            )
            self.biases.append(
                self.add_weight(
                    name=f"bias_{i}",
                    shape=(num,),
                    initializer=self.bias_initializer,
                )
            )

    # A static bound on the characters of the batch's longest token, for
    # `jax.jit` (class docstring); set by the caller around a trace, not
    # part of the layer's config.
    longest_token = None

    def call(self, char_ids):
        check_backend("CharCNNEmbedding")
        char_ids = ops.cast(char_ids, "int32")
        shape = ops.shape(char_ids)
        slots = char_ids.shape[-1] or ops.shape(char_ids)[-1]
        table = ops.concatenate(
            [
                ops.zeros((1, self.char_embedding_dim), self.compute_dtype),
                ops.cast(self.char_embeddings, self.compute_dtype),
            ],
            axis=0,
        )
        flat_ids = ops.reshape(char_ids, (-1, slots))  # [M, 50]
        chars = ops.reshape(
            ops.take(table, flat_ids, axis=0), (-1, self.char_embedding_dim)
        )  # [M * 50, dim], token-major
        occupied = ops.sum(
            ops.cast(_is_character(flat_ids, self.pad_id), "int32"), axis=1
        )
        is_token = ops.any(ops.greater(flat_ids, 0), axis=1)
        pad_row = ops.take(
            table, ops.full((slots,), self.pad_id, "int32"), axis=0
        )
        features = []
        packed = is_tensorflow()
        used = None
        if self.longest_token:
            used = self.longest_token + max(w for w, _ in self.filters)
        for kernel, bias in zip(self.kernels, self.biases):
            if packed:
                pooled = _pooled_convolution(
                    chars, pad_row, kernel, occupied, is_token, slots
                )
            else:
                pooled = _convolution_max(chars, kernel, slots, used)
            pooled = pooled + bias
            features.append(
                ops.relu(pooled)
                if self.activation == "relu"
                else ops.tanh(pooled)
            )
        features = ops.concatenate(features, axis=-1)
        return ops.reshape(features, (shape[0], shape[1], self.num_filters))

    def compute_mask(self, char_ids, mask=None):
        return ops.any(ops.greater(char_ids, 0), axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_filters,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "filters": [list(f) for f in self.filters],
                "char_embedding_dim": self.char_embedding_dim,
                "activation": self.activation,
                "num_characters": self.num_characters,
                "pad_id": self.pad_id,
                **initializer_configs(
                    self,
                    "embeddings_initializer",
                    "kernel_initializer",
                    "bias_initializer",
                ),
            }
        )
        return config


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
