"""The SavedModel contract: signature names, input specs and output keys.

The names follow TF Hub's `google/elmo/3`, so an exported model can be
swapped in for it:

| signature | inputs |
| --- | --- |
| `default` (= `serving_default`) | `text`: string `[B]` |
| `tokens` | `tokens`: string `[B, T]`, `sequence_len`: int32 `[B]` |

Both return `word_emb` float32 `[B, T', P]`, `lstm_outputs1` ..
`lstm_outputs{L}` float32 `[B, T', 2P]`, `elmo` float32 `[B, T', 2P]`,
`default` float32 `[B, 2P]` and `sequence_len` int32 `[B]`, where
`T' = min(T, MAX_TOKENS)` (`T` is the longest sentence for `default`).

Limits (inputs past them are cut, never rejected, so no request can make
the model allocate more than `B * MAX_TOKENS` token rows):

- `MAX_TOKENS` tokens per sentence; later tokens are dropped.
- `MAX_TOKEN_BYTES` (48) UTF-8 bytes per token, as in the ELMo character
  format (`[BOW, 48 bytes, EOW]` in 50 slots); later bytes are dropped.
"""

import tensorflow as tf

from keras_elmo.text import char_vocab
from keras_elmo.text import token_inputs

# === Signature names ===
DEFAULT_SIGNATURE = "default"
TOKENS_SIGNATURE = "tokens"
SERVING_DEFAULT = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
SIGNATURE_NAMES = (DEFAULT_SIGNATURE, TOKENS_SIGNATURE, SERVING_DEFAULT)

# === Input names ===
TEXT = "text"
TOKENS = "tokens"
SEQUENCE_LEN = "sequence_len"

# === Output keys ===
WORD_EMB = "word_emb"
ELMO = "elmo"
MEAN = "default"

# === Limits ===
MAX_TOKENS = 512
MAX_TOKEN_BYTES = char_vocab.MAX_TOKEN_BYTES

# Characters Python's `str.split()` treats as whitespace besides the six
# ASCII ones `tf.strings.split` knows (`keras_elmo.text.token_inputs`).
UNICODE_WHITESPACE = token_inputs.UNICODE_WHITESPACE


def text_spec():
    """`text`: one sentence per row, string `[B]`."""
    return tf.TensorSpec([None], tf.string, name=TEXT)


def tokens_specs():
    """`tokens` string `[B, T]` ("" = padding), `sequence_len` int32 `[B]`."""
    return [
        tf.TensorSpec([None, None], tf.string, name=TOKENS),
        tf.TensorSpec([None], tf.int32, name=SEQUENCE_LEN),
    ]


def tokens_input_spec():
    """The `tokens` inputs as one dict (`obj.tokens(inputs)`)."""
    tokens, sequence_len = tokens_specs()
    return {TOKENS: tokens, SEQUENCE_LEN: sequence_len}


def lstm_output_keys(num_layers):
    """`["lstm_outputs1", ..., "lstm_outputs{L}"]`."""
    return [f"lstm_outputs{k}" for k in range(1, num_layers + 1)]


def output_keys(num_layers=2):
    """Every output key of both signatures, in the documented order."""
    return (
        [WORD_EMB] + lstm_output_keys(num_layers) + [ELMO, MEAN, SEQUENCE_LEN]
    )


def output_specs(projection_dim, num_layers=2):
    """`{key: tf.TensorSpec}` of the outputs (`P` = `projection_dim`)."""
    width = 2 * projection_dim
    specs = {WORD_EMB: tf.TensorSpec([None, None, projection_dim])}
    for key in lstm_output_keys(num_layers):
        specs[key] = tf.TensorSpec([None, None, width])
    specs[ELMO] = tf.TensorSpec([None, None, width])
    specs[MEAN] = tf.TensorSpec([None, width])
    specs[SEQUENCE_LEN] = tf.TensorSpec([None], tf.int32)
    return specs
