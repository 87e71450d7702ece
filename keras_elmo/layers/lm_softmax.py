"""The language-model head: `NextTokenStates` and `LMSoftmax`.

`NextTokenStates`: the biLSTM states that predict each next (forward) and
previous (backward) word. `LMSoftmax`: the output word embedding shared
by both LM directions.
"""

import keras
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.utils import check_int_at_least
from keras_elmo.utils import initializer_configs


@keras_elmo_export("keras_elmo.layers.NextTokenStates")
class NextTokenStates(keras.layers.Layer):
    """Splits the top biLSTM layer into the states that feed the LM softmax.

    With `<S>` at position 0 and `</S>` at `n + 1`, the forward state at
    position `k` (`0..n`) predicts the token at `k + 1`, and the backward
    state at position `k + 1` predicts the token at `k`. So, for the top
    layer `h` `[B, T + 2, 2P]`:

        forward  = h[:, :-1, :P]      # [B, T + 1, P], predicts ids[1:]
        backward = h[:, 1:, P:]       # [B, T + 1, P], predicts ids[:-1]

    where `ids = [<S>, w_1..w_n, </S>]`.

    Call arguments:
        top: float tensor `[B, T + 2, 2P]`.

    Returns:
        A dict `{"forward", "backward"}` of `[B, T + 1, P]` tensors.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True  # targets of -1 carry the padding

    def compute_mask(self, top, mask=None):
        return None

    def call(self, top):
        half = top.shape[-1] // 2
        return {"forward": top[:, :-1, :half], "backward": top[:, 1:, half:]}

    def compute_output_shape(self, top_shape):
        steps = None if top_shape[1] is None else top_shape[1] - 1
        shape = (top_shape[0], steps, top_shape[2] // 2)
        return {"forward": shape, "backward": shape}


@keras_elmo_export("keras_elmo.layers.LMSoftmax")
class LMSoftmax(keras.layers.Layer):
    """Full-softmax logits over a word vocabulary: `h W^T + b`.

    One `[V, P]` matrix `W` and bias `b` serve the forward and the backward
    language model, as in Peters et al. (2018) and bilm-tf. Training with a
    large vocabulary uses the same weights through a sampled softmax
    (`keras_elmo.training.losses`); evaluation always uses the full one.

    Args:
        vocabulary_size: int. `V`.
        embeddings_initializer: initializer for `W` (bilm-tf: N(0, 1/sqrt(P))).
        **kwargs: standard `keras.layers.Layer` arguments. Keep `dtype`
            float32 under mixed precision: logits and the softmax stay fp32.

    Call arguments:
        hidden: float tensor `[..., P]`.

    Returns:
        float tensor `[..., V]` of logits.

    Masking: position-wise; no masking.
    """

    def __init__(self, vocabulary_size, embeddings_initializer=None, **kwargs):
        super().__init__(**kwargs)
        check_int_at_least(
            "vocabulary_size",
            vocabulary_size,
            4,
            "an integer >= 4 (<S>, </S>, <UNK> and a word)",
        )
        self.vocabulary_size = vocabulary_size
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
            or keras.initializers.VarianceScaling(
                1.0, mode="fan_out", distribution="untruncated_normal"
            )
        )

    def build(self, hidden_shape):
        dim = hidden_shape[-1]
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, dim),
            initializer=self.embeddings_initializer,
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.vocabulary_size,), initializer="zeros"
        )

    def call(self, hidden):
        hidden = ops.cast(hidden, self.compute_dtype)
        return ops.matmul(hidden, ops.transpose(self.embeddings)) + self.bias

    def compute_output_shape(self, hidden_shape):
        return tuple(hidden_shape[:-1]) + (self.vocabulary_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                **initializer_configs(self, "embeddings_initializer"),
            }
        )
        return config
