"""What TF Serving needs: a clean process, registered ops, no host paths."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import keras_elmo
from tests.export.export_helpers import SENTENCES
from tests.export.export_helpers import keras_outputs

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))

# Runs with only tensorflow and tensorflow_text imported: loads the model,
# runs both signatures, and checks every op type of saved_model.pb is
# registered there.
CLEAN_PROCESS = r"""
import json, sys
import numpy as np
import tensorflow as tf
keras_after_tf = "keras" in sys.modules
import tensorflow_text  # noqa: F401
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry

sentences = json.loads(sys.argv[1])
reports = {}
for path, out in zip(sys.argv[2::2], sys.argv[3::2]):
    model = tf.saved_model.load(path)
    tokens = [s.split() for s in sentences]
    steps = max(len(t) for t in tokens)
    arrays = {}
    for name, result in (
        ("default", model.signatures["default"](text=tf.constant(sentences))),
        ("tokens", model.signatures["tokens"](
            tokens=tf.constant([t + [""] * (steps - len(t)) for t in tokens]),
            sequence_len=tf.constant([len(t) for t in tokens], tf.int32))),
    ):
        arrays.update({f"{name}.{k}": v.numpy() for k, v in result.items()})
    np.savez(out, **arrays)

    proto = saved_model_pb2.SavedModel()
    with open(path + "/saved_model.pb", "rb") as f:
        proto.ParseFromString(f.read())
    ops, functions = set(), set()
    for graph in proto.meta_graphs:
        ops |= {node.op for node in graph.graph_def.node}
        for function in graph.graph_def.library.function:
            functions.add(function.signature.name)
            ops |= {node.op for node in function.node_def}
    ops -= functions
    reports[path] = {
        "ops": sorted(ops),
        "unregistered": sorted(
            o for o in ops if op_def_registry.get(o) is None
        ),
    }
print(json.dumps({
    "keras_after_tf": keras_after_tf,
    "modules": sorted(m for m in sys.modules if m.split(".")[0] in
                      ("keras", "keras_elmo", "tf_keras", "tensorflow_hub")),
    "models": reports,
}))
"""

PY_FUNC_OPS = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


@pytest.fixture(scope="module")
def clean_run(bilm_export, elmo_layer_export, tmp_path_factory):
    """Both exports in one fresh process: `{name: (report, model, arrays)}`."""
    cwd = tmp_path_factory.mktemp("clean")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONSTARTUP")
    }
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    exports = {"bilm": bilm_export[1], "elmo_layer": elmo_layer_export[1]}
    args = []
    for name, path in exports.items():
        args += [path, str(cwd / f"{name}.npz")]
    done = subprocess.run(
        [sys.executable, "-c", CLEAN_PROCESS, json.dumps(SENTENCES)] + args,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    runs = {}
    for name, path in exports.items():
        arrays = dict(np.load(str(cwd / f"{name}.npz")))
        runs[name] = (report, report["models"][path], arrays)
    return runs


@pytest.mark.large
def test_fresh_process_outputs_equal_keras(
    clean_run, bilm_export, elmo_layer_export
):
    bilm, _ = bilm_export
    expected = keras_outputs(bilm, SENTENCES)
    _, _, arrays = clean_run["bilm"]
    for signature in ("default", "tokens"):
        for key in ("word_emb", "lstm_outputs1", "lstm_outputs2", "elmo"):
            np.testing.assert_allclose(
                arrays[f"{signature}.{key}"], expected[key], atol=1e-5
            )
    layer, _ = elmo_layer_export
    tokens = [s.split() for s in SENTENCES]
    mixed = np.asarray(layer(keras_elmo.batch_to_ids(tokens)))
    _, _, arrays = clean_run["elmo_layer"]
    for signature in ("default", "tokens"):
        np.testing.assert_allclose(
            arrays[f"{signature}.elmo"], mixed, atol=1e-5
        )


@pytest.mark.large
def test_fresh_process_imports_no_keras_elmo_and_knows_every_op(clean_run):
    for report, model, _ in clean_run.values():
        modules = report["modules"]
        assert not [m for m in modules if m.startswith("keras_elmo")]
        if not report["keras_after_tf"]:
            # TensorFlow did not pull Keras in, and loading did not either.
            assert not [m for m in modules if m.split(".")[0] == "keras"]
        assert model["unregistered"] == []
        assert not PY_FUNC_OPS & set(model["ops"])
        # Strings, character ids and the recurrence are core ops.
        for op in ("StringSplitV2", "StaticRegexReplace", "DecodePaddedRaw"):
            assert op in model["ops"]


def _saved_model_cli():
    binary = shutil.which("saved_model_cli")
    if binary:
        return [binary]
    return [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]


def _signature_blocks(text):
    """`{signature: {("inputs"|"outputs", key): (dtype, shape)}}`."""
    blocks = {}
    pattern = re.compile(
        r"(inputs|outputs)\['([^']+)'\] tensor_info:\s+dtype: (\w+)\s+"
        r"shape: ([^\n]+)"
    )
    for match in re.finditer(r"signature_def\['([^']+)'\]:", text):
        start = match.end()
        end = text.find("signature_def[", start)
        body = text[start : end if end >= 0 else len(text)]
        blocks[match.group(1)] = {
            (m.group(1), m.group(2)): (m.group(3), m.group(4).strip())
            for m in pattern.finditer(body)
        }
    return blocks


@pytest.mark.large
def test_saved_model_cli_lists_the_documented_signatures(bilm_export):
    _, path = bilm_export
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run(
        _saved_model_cli() + ["show", "--dir", path, "--all"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    blocks = _signature_blocks(done.stdout)
    outputs = {
        ("outputs", "word_emb"): ("DT_FLOAT", "(-1, -1, 16)"),
        ("outputs", "lstm_outputs1"): ("DT_FLOAT", "(-1, -1, 32)"),
        ("outputs", "lstm_outputs2"): ("DT_FLOAT", "(-1, -1, 32)"),
        ("outputs", "elmo"): ("DT_FLOAT", "(-1, -1, 32)"),
        ("outputs", "default"): ("DT_FLOAT", "(-1, 32)"),
        ("outputs", "sequence_len"): ("DT_INT32", "(-1)"),
    }
    text_input = {("inputs", "text"): ("DT_STRING", "(-1)")}
    assert blocks["default"] == {**text_input, **outputs}
    assert blocks["serving_default"] == {**text_input, **outputs}
    assert blocks["tokens"] == {
        ("inputs", "tokens"): ("DT_STRING", "(-1, -1)"),
        ("inputs", "sequence_len"): ("DT_INT32", "(-1)"),
        **outputs,
    }
    assert "Method name is: tensorflow/serving/predict" in done.stdout


@pytest.mark.large
def test_no_host_paths_in_the_saved_model(bilm_export, elmo_layer_export):
    needles = {
        os.path.abspath(REPO),
        tempfile.gettempdir(),
        os.path.expanduser("~"),
        "/work/",
        "keras_elmo/",
        ".py",
    }
    for _, path in (bilm_export, elmo_layer_export):
        needles.add(os.path.dirname(path))
        for root, _, files in os.walk(path):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    data = f.read()
                for needle in needles:
                    assert needle.encode() not in data, (name, needle)
