"""Reads and writes the bilm-tf / AllenNLP ELMo weights HDF5 (`dump_weights`).

One declarative table (`weight_table`, `keras_elmo.weights.hdf5_ports`)
maps every HDF5 dataset to a Keras variable or one direction of it; the
layout differences:

- `char_embed` has no padding row; ours is implicit (`CharCNNEmbedding`
  keeps the 261 real rows), so it maps one to one.
- `CNN/W_cnn_{i}` is `[1, width, dim, n]`; our conv kernel drops the 1.
- `RNN_{d}/.../Cell{l}/LSTMCell/W_0` is `[P + P, 4H]`: the input rows then
  the recurrent rows; we keep them as two kernels. Gate order i, j, f, o and
  the stored bias (without the forget bias 1.0, which our layer adds at run
  time as TensorFlow's `LSTMCell` does) are the same on both sides, so the
  round trip is bit-exact.
- the highway keeps bilm-tf's carry convention, so no sign flip.
- a model with a Unicode character lexicon (converted from
  ELMoForManyLangs) writes `char_embed` with its own rows and adds
  `word_embed` for a word branch (docs/ELMOFORMANYLANGS.md).
"""

import dataclasses
import logging

from keras_elmo.config import options_rules
from keras_elmo.weights.hdf5_ports import port_weight
from keras_elmo.weights.hdf5_ports import read_ports
from keras_elmo.weights.hdf5_ports import write_ports
from keras_elmo.weights.hdf5_reader import FileKind
from keras_elmo.weights.hdf5_reader import check_claimed_values

logger = logging.getLogger(__name__)

LSTM_CELL = "RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell"
# The word embedding of a model with a word branch (not in bilm-tf files);
# `CNN_proj/W_proj` then has the word rows first: `[word; char-CNN]`.
WORD_EMBED = "word_embed"

WEIGHTS_FILE = FileKind(
    name="Weights",
    layout=" (expected the bilm-tf / AllenNLP `weights.hdf5` layout)",
    missing="; is it an ELMo weights file for these options?",
    shape_source="from the options",
    shape_question="Do the options match the weights?",
)

_HIGHWAY = (
    ("W_carry", "carry_kernel"),
    ("b_carry", "carry_bias"),
    ("W_transform", "transform_kernel"),
    ("b_transform", "transform_bias"),
)


def weight_table(bilm):
    """`[WeightPort]`: every weight of `bilm` and its bilm-tf dataset."""
    cnn = bilm.char_cnn
    table = [port_weight(cnn.char_embeddings, "char_embed")]
    for i, (kernel, bias) in enumerate(zip(cnn.kernels, cnn.biases)):
        table.append(port_weight(kernel, f"CNN/W_cnn_{i}", leading_axis=True))
        table.append(port_weight(bias, f"CNN/b_cnn_{i}"))
    for k, block in enumerate(bilm.highway.blocks):
        for name, key in _HIGHWAY:
            table.append(port_weight(block[key], f"CNN_high_{k}/{name}"))
    if getattr(bilm, "word_embedding", None) is not None:
        # Our extension (an ELMoForManyLangs word branch): [V, w].
        table.append(port_weight(bilm.word_embedding.embeddings, WORD_EMBED))
    dense = bilm.token_projection
    table.append(port_weight(dense.kernel, "CNN_proj/W_proj"))
    table.append(port_weight(dense.bias, "CNN_proj/b_proj"))
    lstm = bilm.bilstm
    for d in range(2):
        for layer in range(bilm.config.num_layers):
            cell = LSTM_CELL.format(d=d, l=layer)
            # W_0: the input kernel's rows, then the recurrent kernel's.
            for kernel in (lstm.kernels, lstm.recurrent_kernels):
                table.append(port_weight(kernel[layer], f"{cell}/W_0", d))
            table.append(port_weight(lstm.biases[layer], f"{cell}/B", d))
            table.append(
                port_weight(lstm.projection_kernels[layer], f"{cell}/W_P_0", d)
            )
    return table


def check_weights_fit(path, config):
    """Checks, before a `BiLM` is built for `config`, that the weights
    file at `path` is safe to open (`hdf5_reader.open_hdf5`) and large
    enough for the parameters `config` implies (`hdf5_reader.
    check_claimed_values`), so tiny files next to huge options allocate
    nothing. Raises a `ValueError` naming the file."""
    fields = {
        f.name: getattr(config, f.name) for f in dataclasses.fields(config)
    }
    count = options_rules.parameter_count(fields)
    check_claimed_values(path, count, WEIGHTS_FILE)


def load_bilm_hdf5(bilm, path):
    """Loads a bilm-tf / AllenNLP weights HDF5 into a built `BiLM`.

    Every dataset's shape is checked against the model built from the
    options file; a missing dataset or a wrong shape raises a `ValueError`
    naming the file, the dataset, and the expected and found shapes, and
    nothing is assigned until every dataset has been read and checked.
    """
    count = read_ports(path, weight_table(bilm), WEIGHTS_FILE)
    logger.info("Loaded %d datasets from %s", count, path)


def save_bilm_hdf5(bilm, path, dtype="float32"):
    """Writes a `BiLM`'s weights in the bilm-tf / AllenNLP HDF5 layout.

    Datasets with exactly the names AllenNLP's loader reads, float32 by
    default (`dtype="float16"` halves the file for shipping; loading casts
    back to float32); written to a temporary file and renamed, so `path` is
    never half-written.
    """
    write_ports(path, weight_table(bilm), dtype)
    logger.info("Wrote ELMo weights to %s", path)
