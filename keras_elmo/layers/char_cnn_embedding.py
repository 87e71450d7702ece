"""`CharCNNEmbedding`: character ids -> max-pooled char-CNN token features."""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.text import char_vocab
from keras_elmo.utils import clone_initializer
from keras_elmo.utils import initializer_configs

_PAD_ID = char_vocab.PAD_CHAR + char_vocab.ID_OFFSET


def _occupied_slots(flat_ids):
    """Max over rows of the slots holding a character other than PAD."""
    real = ops.logical_and(
        ops.greater(flat_ids, 0), ops.not_equal(flat_ids, _PAD_ID)
    )
    return ops.max(ops.sum(ops.cast(real, "int32"), axis=1))


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

    Args:
        filters: list of `(width, num_filters)` pairs.
        char_embedding_dim: int. Size of a character's embedding.
        activation: `"relu"` or `"tanh"`.
        num_characters: int. Rows of the embedding including the padding
            row (262).
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
        if int(num_characters) < char_vocab.NUM_CHARACTERS:
            raise ValueError(
                "Received an invalid value for argument `num_characters`, "
                f"expected >= {char_vocab.NUM_CHARACTERS} (ids 0..261), got "
                f"{num_characters!r}."
            )
        self.filters = filters
        self.char_embedding_dim = int(char_embedding_dim)
        self.activation = activation
        self.num_characters = int(num_characters)
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

    def call(self, char_ids):
        char_ids = ops.cast(char_ids, "int32")
        shape = ops.shape(char_ids)
        table = ops.concatenate(
            [
                ops.zeros((1, self.char_embedding_dim), self.compute_dtype),
                ops.cast(self.char_embeddings, self.compute_dtype),
            ],
            axis=0,
        )
        flat_ids = ops.reshape(char_ids, (-1, shape[-1]))
        # Row 0: an all-padding token, dropped after pooling (TensorFlow's
        # convolution returns a wrongly shaped result for an empty batch,
        # and a batch of 0 tokens is valid input). Row 1: a token of PAD
        # characters only, whose pooled value is that of an all-PAD window.
        flat_ids = ops.concatenate(
            [
                ops.zeros((1, shape[-1]), "int32"),
                ops.full((1, shape[-1]), _PAD_ID, "int32"),
                flat_ids,
            ],
            axis=0,
        )
        chars = ops.take(table, flat_ids, axis=0)  # [2 + N, 50, dim]
        occupied = _occupied_slots(flat_ids)
        is_token = ops.any(ops.greater(flat_ids, 0), axis=1)
        features = []
        for (width, _), kernel, bias in zip(
            self.filters, self.kernels, self.biases
        ):
            pooled = self._pooled_convolution(
                chars, kernel, width, occupied, is_token
            )
            pooled = pooled[2:] + bias
            features.append(
                ops.relu(pooled)
                if self.activation == "relu"
                else ops.tanh(pooled)
            )
        features = ops.concatenate(features, axis=-1)
        return ops.reshape(features, (shape[0], shape[1], self.num_filters))

    def _pooled_convolution(self, chars, kernel, width, occupied, is_token):
        """`max_t conv(chars, kernel)[:, t]`, skipping all-PAD windows.

        A token's characters fill slots `0..n-1` (BOW, bytes, EOW) and PAD
        fills the rest, so with `L = max n` over the batch every window
        starting at `t >= L` holds PAD only and has the same value `v` for
        every token. The convolution runs over the first `L + width - 1`
        slots (windows `t < L`) and, where windows were skipped, `v` (row
        1's value) joins the max of every real token (not of all-zero
        padding tokens): the same result with less work, as real tokens
        mostly fill under 20 of the 50 slots.
        """
        slots = chars.shape[1] or ops.shape(chars)[1]
        span = ops.minimum(ops.maximum(occupied, 1) + width - 1, slots)
        conv = ops.conv(chars[:, :span], kernel, strides=1, padding="valid")
        pooled = ops.max(conv, axis=1)
        skipped = ops.less(span, slots)
        pad_value = ops.where(
            ops.logical_and(skipped, is_token)[:, None], pooled[1:2], pooled
        )
        return ops.maximum(pooled, pad_value)

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
                **initializer_configs(
                    self,
                    "embeddings_initializer",
                    "kernel_initializer",
                    "bias_initializer",
                ),
            }
        )
        return config
