"""Reads and writes the LM softmax HDF5 as bilm-tf names it.

`softmax/W` `[V, P]` (one row per vocabulary word) and `softmax/b` `[V]`:
the weights of `keras_elmo.layers.LMSoftmax`, shared by both directions.
A trained model directory keeps them in `softmax.hdf5`, next to the biLM's
`weights.hdf5` (which, as in bilm-tf's `dump_weights`, has no softmax).
"""

from keras_elmo.weights.hdf5_ports import port_weight
from keras_elmo.weights.hdf5_ports import read_ports
from keras_elmo.weights.hdf5_ports import write_ports
from keras_elmo.weights.hdf5_reader import FileKind

SOFTMAX_FILE = FileKind(
    name="Softmax",
    shape_source="vocabulary x projection",
    shape_question="Was it trained with the same vocabulary?",
)


def softmax_table(softmax):
    """`[WeightPort]` of an `LMSoftmax`."""
    return [
        port_weight(softmax.embeddings, "softmax/W"),
        port_weight(softmax.bias, "softmax/b"),
    ]


def save_softmax_hdf5(softmax, path):
    """Writes `softmax/W` and `softmax/b` atomically (temp + rename)."""
    write_ports(path, softmax_table(softmax))


def load_softmax_hdf5(softmax, path):
    """Loads `softmax/W` and `softmax/b`, checking shapes and values.

    Raises a `ValueError` naming the file, the dataset and what was wrong
    (missing, not a dataset, wrong shape or dtype, unreadable, non-finite)
    before anything is assigned.
    """
    read_ports(path, softmax_table(softmax), SOFTMAX_FILE)
