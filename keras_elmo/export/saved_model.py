"""`export_saved_model`: a biLM as a TF-Hub-`elmo/3`-style SavedModel.

Builds the `ElmoModule` (`elmo_module.py`), saves it beside the
destination and renames it into place, with every variable but the mix's
marked frozen (`mark_frozen_variables`).
"""

import os

import tensorflow as tf

from keras_elmo.export import signatures as sig
from keras_elmo.export.elmo_module import build_module
from keras_elmo.presets.sources import is_saved_model
from keras_elmo.utils.atomic import atomic_directory
from keras_elmo.utils.atomic import atomic_write


def export_saved_model(
    bilm_or_elmo_layer,
    path,
    max_tokens=sig.MAX_TOKENS,
    overwrite=True,
    vocabulary=None,
):
    """Writes a SavedModel with TF Hub `google/elmo/3` signatures.

    Signatures (see `keras_elmo.export.signatures` and
    `savedmodel/README.md`): `default` (= `serving_default`) takes
    sentences `text` string `[B]`, split on whitespace in graph; `tokens`
    takes `tokens` string `[B, T]` (`""` = padding) and `sequence_len`
    int32 `[B]`. Both return `word_emb` `[B, T, P]`, `lstm_outputs1..L`
    `[B, T, 2P]`, `elmo` `[B, T, 2P]`, `default` `[B, 2P]` (mean of `elmo`
    over real tokens) and `sequence_len` `[B]`.

    `elmo` is the ElmoLayer's first `ScalarMix` when an `ElmoLayer` is
    given, else a fresh mix with `s = 0`, `gamma = 1` (the plain layer
    average); either way `s` and `gamma` are the SavedModel's
    `trainable_variables`, for fine-tuning through `hub.KerasLayer`.

    The directory is written beside `path` and renamed into place, so a
    reader (or TF Serving polling a base directory) never sees half a
    model. No Python functions, absolute paths or Keras objects are
    stored; loading needs only `tensorflow`.

    Args:
        bilm_or_elmo_layer: a stateless `keras_elmo.BiLM` or a
            `keras_elmo.layers.ElmoLayer`.
        path: str. Output directory.
        max_tokens: int. Tokens kept per sentence (later ones are
            dropped); defaults to `MAX_TOKENS` (512).
        overwrite: bool. Replace an existing SavedModel at `path`. A
            non-empty directory that holds no SavedModel is never replaced.
        vocabulary: None, a list of str tokens or the path of a bilm-tf
            vocabulary file: the SavedModel then holds these tokens' biLM
            token embeddings and a hash table, and runs the char-CNN only
            for other tokens (`keras_elmo.models.TokenEmbeddingCache`).
            Same outputs up to float rounding, less work per call. An
            `ElmoLayer` built with a `vocabulary` exports its cache.

    Returns:
        `path`.

    Raises:
        FileExistsError: `path` exists and may not be replaced.

    Example:

    >>> bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
    >>> keras_elmo.export_saved_model(bilm, "elmo/1")
    'elmo/1'
    >>> elmo = tf.saved_model.load("elmo/1")
    >>> out = elmo.signatures["default"](text=tf.constant(["Hello world"]))
    >>> out["elmo"].shape, out["default"].shape
    (TensorShape([1, 2, 32]), TensorShape([1, 32]))
    """
    path = os.fspath(path)
    _check_destination(path, overwrite)
    module = build_module(
        bilm_or_elmo_layer, max_tokens=max_tokens, vocabulary=vocabulary
    )
    with atomic_directory(path) as tmp:
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        mark_frozen_variables(tmp)
    return path


def mark_frozen_variables(path):
    """Rewrites the SavedModel at `path` so that every variable outside
    the root's `trainable_variables` (the mix's `s` and `gamma`) is saved
    with `trainable=False`.

    `tf.saved_model.save` records each variable's `trainable` flag as the
    underlying `tf.Variable` was created, and Keras 3 creates every layer
    weight trainable, even of a frozen biLM; loaders that list variables
    by that flag (`keras.layers.TFSMLayer`, `tf.saved_model.load(...)
    .variables`) would then see 27 trainable variables of which 25 get
    no gradient (the SavedModel stops gradients at the biLM), and Adam
    would build slots for them. The flag lives in the object graph of
    `saved_model.pb`, so only that proto is rewritten.
    """
    from tensorflow.core.protobuf import saved_model_pb2

    pb_path = os.path.join(path, "saved_model.pb")
    model = saved_model_pb2.SavedModel()
    with open(pb_path, "rb") as f:
        model.ParseFromString(f.read())
    for meta_graph in model.meta_graphs:
        nodes = meta_graph.object_graph_def.nodes
        keep = set()
        for child in nodes[0].children:
            if child.local_name == "trainable_variables":
                keep = {c.node_id for c in nodes[child.node_id].children}
        for node_id, node in enumerate(nodes):
            if node.WhichOneof("kind") == "variable" and node_id not in keep:
                node.variable.trainable = False
    with atomic_write(pb_path, "wb") as f:
        f.write(model.SerializeToString())
    # fingerprint.pb holds a checksum of saved_model.pb: write it again.
    from tensorflow.python.saved_model import fingerprinting_utils

    os.remove(os.path.join(path, "fingerprint.pb"))
    fingerprinting_utils.write_fingerprint(path)


def _check_destination(path, overwrite):
    if not os.path.exists(path):
        return
    if os.path.isdir(path) and not os.listdir(path):
        return
    if is_saved_model(path):
        if overwrite:
            return
        raise FileExistsError(
            f"A SavedModel exists at {path!r}; pass `overwrite=True` "
            "to replace it."
        )
    raise FileExistsError(
        f"{path!r} exists and is not a SavedModel directory; refusing to "
        "replace it. Choose another path or remove it first."
    )
