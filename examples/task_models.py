"""The paper's task models at our scale: `[GloVe; char-CNN]` (+ ELMo).

Token features (Peters et al. 2018, section 3: the baseline's context-free
representation `x_k`, then `[x_k; ELMo_k]`):

    x_k = [GloVe(w_k) (frozen, 50-d); char_cnn(w_k)]
    char_cnn(w) = max over characters of ReLU(Conv1D_3(char_emb(w)))
    ELMo_k^in = dropout(gamma * sum_j softmax(s)_j h_{k,j})

over the frozen biLM's `L + 1` layers `h_{k,j}`, fed in precomputed
(`task_training.ElmoCache`): a `ScalarMix` over them is the same function
as `keras_elmo.ElmoLayer(bilm, trainable_bilm=False)` with the same
options (`tests/paper_tables_test.py` checks it), only cheaper. The
`ElmoOptions` are ElmoLayer's: `l2_coef` (paper Table 2's lambda),
`scalar_mix_parameters` (Table 2's "last layer only") and a second,
independent mix at the encoder's output (Table 3,
`num_output_representations=2`):

    h_k = BiLSTM(dropout([x_k; ELMo_k^in]))_k          [B, T, 2H]
    h_k <- [h_k; ELMo_k^out]                             (output option)

Heads, one per task:
- `pos`: `softmax(W dropout(h_k) + b)` per token (17 UPOS tags).
- `sentiment`: `softmax(W dropout(maxpool_k h_k) + b)` (2 classes).
- `snli`: premise and hypothesis through the same encoder, max-pooled to
  `u`, `v`; `softmax(W2 dropout(relu(W1 [u; v; |u - v|; u * v])))` (3
  classes), the InferSent-style model (Conneau et al. 2017), far smaller
  than the paper's ESIM.
"""

import dataclasses

import keras
from keras import ops

import keras_elmo

TASKS = ("pos", "sentiment", "snli")
# Fixed mix weights that select the top layer (ElmoLayer's
# `scalar_mix_parameters`): softmax gives exactly [0, ..., 0, 1].
LAST_LAYER_ONLY = -9e10


@dataclasses.dataclass(frozen=True)
class ElmoOptions:
    """ELMo in a task model (the `keras_elmo.ElmoLayer` arguments).

    Attributes:
        num_layers: int, the biLM's `L + 1` output layers.
        dim: int, their width `2P`.
        at_output: bool, a second mix at the encoder output (Table 3).
        l2_coef: float, `l2_coef * sum(s^2)` added to the loss (Table 2).
        last_only: bool, the top layer only, no trained mix (Table 2).
        dropout: float, on each mix.
    """

    num_layers: int
    dim: int
    at_output: bool = False
    l2_coef: float = 0.0
    last_only: bool = False
    dropout: float = 0.3

    def mix_kwargs(self):
        fixed = None
        if self.last_only:
            fixed = [LAST_LAYER_ONLY] * (self.num_layers - 1) + [1.0]
        return {
            "num_layers": self.num_layers,
            "l2_coef": self.l2_coef,
            "scalar_mix_parameters": fixed,
        }


@keras.saving.register_keras_serializable(package="keras_elmo_examples")
class MaskedMaxPool(keras.layers.Layer):
    """`max_k x_k` over the real positions of `[B, T, D]` -> `[B, D]`."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            inputs = ops.where(mask[..., None], inputs, -1e9)
        return ops.max(inputs, axis=1)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


@keras.saving.register_keras_serializable(package="keras_elmo_examples")
class PairFeatures(keras.layers.Layer):
    """`[u; v; |u - v|; u * v]` of two `[B, D]` sentence vectors."""

    def call(self, inputs):
        u, v = inputs
        return ops.concatenate([u, v, ops.abs(u - v), u * v], axis=-1)

    def compute_output_shape(self, input_shapes):
        shape = input_shapes[0]
        return (shape[0], 4 * shape[1])


class Encoder:
    """The shared token features and BiLSTM, applied to 1 or 2 sentences."""

    def __init__(
        self, glove, num_chars, max_word_chars, elmo, hidden, dropout, cove_dim
    ):
        self.elmo = elmo
        self.cove_dim = cove_dim
        self.max_word_chars = max_word_chars
        self.glove = keras.layers.Embedding(
            glove.shape[0],
            glove.shape[1],
            embeddings_initializer=keras.initializers.Constant(glove),
            trainable=False,
            mask_zero=True,
            name="glove",
        )
        self.char_embedding = keras.layers.Embedding(
            num_chars, 16, name="char_embedding"
        )
        # A (1, 3) Conv2D over [B, T, C, 16] is a width-3 Conv1D over
        # each token's characters; then max over the C characters.
        self.char_cnn = keras.layers.Conv2D(
            32, (1, 3), padding="same", activation="relu", name="char_cnn"
        )
        self.char_max = keras.layers.MaxPooling2D(
            (1, max_word_chars), name="char_max"
        )
        self.char_reshape = keras.layers.Reshape((-1, 32), name="char_feats")
        self.concat = keras.layers.Concatenate(name="token_features")
        self.dropout = keras.layers.Dropout(dropout)
        self.bilstm = keras.layers.Bidirectional(
            keras.layers.LSTM(hidden, return_sequences=True), name="bilstm"
        )
        self.mixes, self.mix_dropouts = [], []
        if elmo is not None:
            count = 2 if elmo.at_output else 1
            for k in range(count):
                self.mixes.append(
                    keras_elmo.layers.ScalarMix(
                        **elmo.mix_kwargs(), name=f"scalar_mix_{k}"
                    )
                )
                self.mix_dropouts.append(keras.layers.Dropout(elmo.dropout))

    def inputs(self, slot):
        """The Keras inputs of sentence `slot` (0, or 1 for a hypothesis)."""
        shapes = {
            f"words_{slot}": ((None,), "int32"),
            f"chars_{slot}": ((None, self.max_word_chars), "int32"),
        }
        if self.elmo is not None:
            shapes[f"bilm_{slot}"] = (
                (self.elmo.num_layers, None, self.elmo.dim),
                "float32",
            )
        if self.cove_dim:
            shapes[f"cove_{slot}"] = ((None, self.cove_dim), "float32")
        inputs = {
            name: keras.Input(shape, dtype=dtype, name=name)
            for name, (shape, dtype) in shapes.items()
        }
        return inputs

    def __call__(self, inputs, slot):
        """`[B, T, 2H]` (or `[B, T, 2H + 2P]`) encoder states."""
        words = self.glove(inputs[f"words_{slot}"])
        chars = self.char_embedding(inputs[f"chars_{slot}"])
        chars = self.char_reshape(self.char_max(self.char_cnn(chars)))
        pieces = [words, chars]
        if self.cove_dim:  # McCann et al.: [GloVe(w); CoVe(w)]
            pieces.append(inputs[f"cove_{slot}"])
        mixed = [
            dropout(mix(inputs[f"bilm_{slot}"]))
            for mix, dropout in zip(self.mixes, self.mix_dropouts)
        ]
        if mixed:
            pieces.append(mixed[0])
        states = self.bilstm(self.dropout(self.concat(pieces)))
        if len(mixed) == 2:
            states = keras.layers.Concatenate()([states, mixed[1]])
        return states


def build_task_model(
    task,
    glove,
    num_chars,
    num_classes,
    max_word_chars=20,
    elmo=None,
    hidden=64,
    dropout=0.3,
    cove_dim=0,
):
    """The `task` model (see module docstring) with frozen `glove` rows.

    Args:
        task: one of `TASKS`.
        glove: float32 `[V, 50]`, row 0 padding, row 1 `<UNK>` (zeros).
        num_chars: int, character vocabulary size (0 = padding).
        num_classes: int, tags (pos) or classes.
        max_word_chars: int, characters kept per token.
        elmo: `ElmoOptions` or None (the `[GloVe; char-CNN]` baseline).
        hidden: int, BiLSTM units per direction.
        dropout: float.
        cove_dim: int, the width `2H` of precomputed CoVe features added
            to the token features (`cove_i` inputs), 0 for none.

    Returns:
        A `keras.Model` taking `words_i` `[B, T]`, `chars_i`
        `[B, T, max_word_chars]` (and `bilm_i` `[B, L + 1, T, 2P]`,
        `cove_i` `[B, T, 2H]`) for each sentence `i`; logits
        `[B, T, C]` (pos) or `[B, C]`.
    """
    if task not in TASKS:
        raise ValueError(
            f"Received an invalid value for argument `task`, expected one "
            f"of {TASKS}, got {task!r}."
        )
    encoder = Encoder(
        glove, num_chars, max_word_chars, elmo, hidden, dropout, cove_dim
    )
    slots = (0, 1) if task == "snli" else (0,)
    inputs = {}
    for slot in slots:
        inputs.update(encoder.inputs(slot))
    states = [encoder(inputs, slot) for slot in slots]
    drop = keras.layers.Dropout(dropout)
    if task == "pos":
        logits = keras.layers.Dense(num_classes, name="logits")(drop(states[0]))
    elif task == "sentiment":
        pooled = MaskedMaxPool(name="max_pool")(states[0])
        logits = keras.layers.Dense(num_classes, name="logits")(drop(pooled))
    else:
        pool = MaskedMaxPool(name="max_pool")
        pair = PairFeatures(name="pair")([pool(s) for s in states])
        hidden_layer = keras.layers.Dense(hidden, activation="relu")
        logits = keras.layers.Dense(num_classes, name="logits")(
            drop(hidden_layer(drop(pair)))
        )
    return keras.Model(inputs, logits, name=f"{task}_model")
