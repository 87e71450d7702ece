"""SavedModels: writing keras_elmo's (`export_saved_model`) and checking
anyone's before it is loaded (`check_saved_model`).

`export_saved_model` builds the `ElmoModule` (`elmo_module.py`), saves it
beside the destination and renames it into place, with every variable but the
mix's marked frozen (`mark_frozen_variables`).

Before loading, a SavedModel may run the ops of keras_elmo's own exports and
nothing that reads, writes or calls back into Python. A SavedModel is a
program: `tf.saved_model.load` restores its functions and every signature call
runs whatever ops they hold (`ReadFile`, `WriteFile`, `MatchingFiles`,
`PyFunc`, ...). `check_saved_model(path)` parses `saved_model.pb` (never
loading it), collects the op of every node of the graph and of every function
in its library, and refuses ops outside `EXPORT_OPS`, the ops
`export_saved_model` writes (tiny, vocabulary-cached, ELMoForManyLangs and the
shipped `elmo_small_en` exports, plus pure arithmetic, array and string ops of
the same kind).

Checkpoint ops (`SAVER_OPS`: `SaveV2`, `RestoreV2`, ...) are accepted only
in functions reached from the meta graph's `saver_def` alone (the
standard save / restore path `tf.saved_model.save` writes); the same op
in a serving function, or in a function a signature also reaches, is
refused. Function calls are followed by name (node ops and `func`
attributes). The caller may skip the check with an explicit trust
argument (`trust_saved_model=True`), for a SavedModel it knows.
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


# Ops of keras_elmo's exports (`export_saved_model`), collected from its
# exports (see the module docstring), and pure ops of the same kind.
EXPORT_OPS = frozenset(
    """
    Abs AddN AddV2 All Any ArgMax ArgMin Assert AssignVariableOp
    BatchMatMulV2 BiasAdd Bitcast BroadcastArgs BroadcastTo Cast Ceil
    ClipByValue ConcatV2 Const Cumsum DecodePaddedRaw DenseBincount Einsum
    Elu EnsureShape Equal Exp ExpandDims Fill Floor FloorDiv FloorMod
    GatherNd GatherV2 Greater GreaterEqual HashTableV2 Identity IdentityN If
    LeakyRelu Less LessEqual Log LogicalAnd LogicalNot LogicalOr
    LookupTableFindV2 LookupTableImportV2 LookupTableSizeV2 MatMul Max
    Maximum Mean Min Minimum Mul Neg NoOp NotEqual OneHot OnesLike Pack Pad
    PadV2 PartitionedCall Placeholder Pow Prod RaggedRange
    RaggedTensorToTensor Range Rank ReadVariableOp RealDiv Reciprocal Relu
    Reshape ReverseSequence ReverseV2 Rsqrt ScatterNd SegmentMax Select
    SelectV2 Shape ShapeN Sigmoid Sign Size Slice Softmax Softplus Split
    SplitV Sqrt Square Squeeze StatefulPartitionedCall StatelessIf
    StatelessWhile StaticRegexFullMatch StaticRegexReplace StopGradient
    StridedSlice StringJoin StringLength StringSplitV2 Sub Substr Sum Tanh
    TensorListConcatV2 TensorListElementShape TensorListFromTensor
    TensorListGetItem TensorListLength TensorListReserve TensorListSetItem
    TensorListStack Tile TopKV2 Transpose UnicodeDecode UnicodeEncode
    UnicodeTranscode UniqueV2 Unpack UnsortedSegmentMin VarHandleOp
    VarIsInitializedOp Where While ZerosLike
    """.split()
)

# The checkpoint ops of `tf.saved_model.save`'s save and restore functions.
SAVER_OPS = frozenset(
    """
    DisableCopyOnRead MergeV2Checkpoints RestoreV2 SaveV2 ShardedFilename
    StringJoin StaticRegexFullMatch Select
    """.split()
)

TRUST_ARGUMENT = "trust_saved_model"


class UntrustedSavedModelError(ValueError):
    """A SavedModel holds ops keras_elmo's exports never write.

    `argument` is the trust argument that skips the check, `ops` the
    refused op names (sorted)."""

    def __init__(self, message, ops=()):
        super().__init__(message)
        self.argument = TRUST_ARGUMENT
        self.ops = list(ops)


def read_proto(path):
    """The parsed `saved_model.pb` of the SavedModel folder `path`."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    pb = os.path.join(os.fspath(path), "saved_model.pb")
    proto = saved_model_pb2.SavedModel()
    try:
        with tf.io.gfile.GFile(pb, "rb") as f:
            proto.ParseFromString(f.read())
    except Exception as e:  # noqa: BLE001 (gfile, protobuf)
        raise ValueError(
            f"SavedModel {os.fspath(path)!r}: {pb!r} cannot be read as a "
            f"SavedModel ({type(e).__name__}: {e})."
        ) from e
    return proto


def _called(node, functions):
    """Library functions a node calls: by its op or a `func` attribute."""
    names = {node.op} & functions
    for value in node.attr.values():
        if value.HasField("func"):
            names.add(value.func.name)
        if value.HasField("list"):
            names.update(f.name for f in value.list.func)
    return names & functions


def _closure(roots, calls):
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(calls.get(name, ()))
    return seen


def refused_ops(proto):
    """`{op: [where, ...]}` of the ops outside the allow-lists (module
    docstring) in a parsed `SavedModel` proto; empty when it passes."""
    refused = {}

    def check(ops, allowed, where):
        for op in ops - allowed:
            refused.setdefault(op, []).append(where)

    for meta_graph in proto.meta_graphs:
        graph = meta_graph.graph_def
        library = {f.signature.name: f for f in graph.library.function}
        functions = set(library)
        calls = {
            name: set().union(*(_called(n, functions) for n in f.node_def))
            for name, f in library.items()
        }
        saver = meta_graph.saver_def
        saver_nodes = {
            name.split(":")[0]
            for name in (saver.save_tensor_name, saver.restore_op_name)
            if name
        }
        saver_roots, other_roots = set(), set()
        for node in graph.node:
            called = _called(node, functions)
            (saver_roots if node.name in saver_nodes else other_roots).update(
                called
            )
            check({node.op} - functions, EXPORT_OPS, "the graph")
        saver_reach = _closure(saver_roots, calls)
        # Every function the saver alone does not reach may be called by
        # the loaded object or a signature.
        other_reach = _closure(other_roots | (functions - saver_reach), calls)
        for name, function in library.items():
            ops = {n.op for n in function.node_def} - functions
            allowed = EXPORT_OPS
            if name in saver_reach and name not in other_reach:
                allowed = EXPORT_OPS | SAVER_OPS
            check(ops, allowed, f"function {name}")
    return refused


def check_saved_model(path, trust_saved_model=False):
    """Refuses a SavedModel whose ops keras_elmo's exports never write,
    before anything of it is loaded (see the module docstring).

    Args:
        path: str. The SavedModel folder (local, or a URI TensorFlow reads).
        trust_saved_model: bool. Skip the check: the caller vouches for
            the SavedModel (it will run as the program it is).

    Raises:
        UntrustedSavedModelError: names the folder, the refused ops (and
            where they are) and the trust argument.
        ValueError: `saved_model.pb` cannot be parsed.
    """
    if trust_saved_model:
        return
    refused = refused_ops(read_proto(path))
    if not refused:
        return
    shown = "; ".join(
        f"{op} (in {', '.join(sorted(set(where))[:3])})"
        for op, where in sorted(refused.items())[:10]
    )
    raise UntrustedSavedModelError(
        f"SavedModel {os.fspath(path)!r} was not written by keras_elmo's "
        f"export: it holds ops outside those exports' allow-list: {shown}. "
        "A SavedModel is a program (it could read or write files when "
        "called); it is refused unless you trust it: pass "
        f"`{TRUST_ARGUMENT}=True`.",
        sorted(refused),
    )
