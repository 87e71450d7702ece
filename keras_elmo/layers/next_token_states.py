"""`NextTokenStates`: the biLSTM states that predict each next/previous word."""

import keras

from keras_elmo.api_export import keras_elmo_export


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
