"""What a SavedModel may run before keras_elmo loads it: the ops of its own
exports, and nothing that reads, writes or calls back into Python.

A SavedModel is a program: `tf.saved_model.load` restores its functions
and every signature call runs whatever ops they hold (`ReadFile`,
`WriteFile`, `MatchingFiles`, `PyFunc`, ...). `check_saved_model(path)`
parses `saved_model.pb` (never loading it), collects the op of every node
of the graph and of every function in its library, and refuses ops
outside `EXPORT_OPS`, the ops `export_saved_model` writes (tiny,
vocabulary-cached, ELMoForManyLangs and the shipped `elmo_small_en`
exports, plus pure arithmetic, array and string ops of the same kind).

Checkpoint ops (`SAVER_OPS`: `SaveV2`, `RestoreV2`, ...) are accepted only
in functions reached from the meta graph's `saver_def` alone (the
standard save / restore path `tf.saved_model.save` writes); the same op
in a serving function, or in a function a signature also reaches, is
refused. Function calls are followed by name (node ops and `func`
attributes). The caller may skip the check with an explicit trust
argument (`trust_saved_model=True`), for a SavedModel it knows.
"""

import os

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
