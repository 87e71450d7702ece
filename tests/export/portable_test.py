"""ONNX and LiteRT exports (`export_portable`) and their TensorFlow-free
reader (`keras_elmo/export/portable_runtime.py`).

Every output of both formats is compared with the Keras biLM (and its
mix) on real sentences of varied lengths in one batch: the largest
deviation must be at most 1e-5 of the largest activation. The reader runs
in a subprocess in which importing TensorFlow or Keras fails
(`KERAS_ELMO_CLEAN_PYTHON` may name another interpreter, e.g. one of a
virtual environment holding only numpy, onnxruntime and ai-edge-litert).
"""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.export import portable_runtime
from keras_elmo.export.portable import export_portable
from keras_elmo.models.bilm import elmo_layers
from tests.conftest import tiny_bilm

DATA = os.path.join(
    os.path.dirname(__file__), "..", "data", "en_pd_lm_valid_sample.txt.gz"
)
RUNTIME = portable_runtime.__file__
SUFFIX = {"onnx": ".onnx", "litert": ".tflite"}
NEEDS = {"onnx": ("tf2onnx", "onnxruntime"), "litert": ("ai_edge_litert",)}
TOLERANCE = 1e-5  # of the largest activation
# int8 (dynamic range) against float32, of the largest activation: 1.5x
# the largest deviation measured for the shipped model, 0.049 (ONNX, the
# sentences of `real_sentences` one at a time; in one batch 0.040, LiteRT
# 0.020; 0.034 and 0.030 on 30 UD English-EWT test sentences). ONNX
# Runtime quantizes each activation per call with one scale per tensor,
# so a sentence's int8 outputs also depend on its batch.
INT8_TOLERANCE = 0.075
# The smallest cosine between an int8 and a float `elmo` token vector:
# measured 0.9976 (ONNX, EWT), 0.9990 (ONNX, these sentences).
INT8_MIN_COSINE = 0.995


def real_sentences():
    """Six sentences of the committed corpus sample, 2 to 61 tokens, and
    one with a token past 48 UTF-8 bytes and non-ASCII tokens."""
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        lines = [line.split() for line in f]
    by_length = {len(tokens): tokens for tokens in lines}
    picked = [by_length[n] for n in (7, 2, 61, 19, 3, 30)]
    return picked + [["naïve", "x" * 60, "😀", "."]]


def needs(format):
    for module in NEEDS[format]:
        pytest.importorskip(
            module,
            reason=f"{module} is not installed: the {format} export test "
            "needs pip install 'keras-elmo[test]'",
        )


def reference(bilm, mix, sentences):
    """The Keras outputs, under the export's names."""
    out = bilm(keras_elmo.batch_to_ids(sentences))
    expected = {k: np.asarray(v) for k, v in out.items() if k != "mask"}
    elmo = np.asarray(mix(elmo_layers(out), mask=out["mask"]))
    lengths = np.array([len(s) for s in sentences], np.int32)
    expected["elmo"] = elmo
    count = np.maximum(lengths, 1).astype(np.float32)[:, None]
    expected["default"] = elmo.sum(axis=1) / count
    expected["sequence_len"] = lengths
    return expected


def assert_close(outputs, expected):
    assert sorted(outputs) == sorted(expected)
    scale = max(
        float(np.abs(v).max())
        for k, v in expected.items()
        if k != "sequence_len"
    )
    assert scale > 0.01  # the comparison is not between near-zeros
    np.testing.assert_array_equal(
        outputs["sequence_len"], expected["sequence_len"]
    )
    for key, value in expected.items():
        assert outputs[key].shape == value.shape, key
        assert outputs[key].dtype == value.dtype, key
        deviation = float(np.abs(outputs[key] - value).max())
        assert deviation <= TOLERANCE * scale, (key, deviation, scale)


def run_clean(path, sentences, tmp_path, tolerance=TOLERANCE):
    """The reader's outputs, run where TensorFlow and Keras cannot load;
    the first sentence alone must give its batch row within `tolerance`
    of the largest activation."""
    out = tmp_path / "out.npz"
    script = f"""
import importlib.abc, importlib.util, json, sys
import numpy as np

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("tensorflow", "keras", "tf_keras"):
            raise ImportError("blocked: " + name)

sys.meta_path.insert(0, Block())
spec = importlib.util.spec_from_file_location("rt", {RUNTIME!r})
rt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rt)
elmo = rt.PortableElmo({str(path)!r}, num_threads=1)
sentences = json.loads(sys.stdin.read())
single = elmo(sentences[:1])  # another shape first: dynamic B and T
for empty, shape in (([], (0, 0)), ([[], []], (2, 0))):
    got = elmo(empty)
    assert got["elmo"].shape[:2] == shape, got["elmo"].shape
    assert got["default"].shape[0] == shape[0], got["default"].shape
    assert got["sequence_len"].tolist() == [0] * shape[0]
out = elmo(sentences)
out.update({{"single_" + k: v for k, v in single.items()}})
np.savez({str(out)!r}, **out)
top = {{m.split(".")[0] for m in sys.modules}}
assert not top & {{"tensorflow", "keras"}}, top
"""
    python = os.environ.get("KERAS_ELMO_CLEAN_PYTHON", sys.executable)
    result = subprocess.run(
        [python, "-c", script],
        input=json.dumps(sentences),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    with np.load(out) as data:
        outputs = {k: data[k] for k in data.files}
    # The first sentence alone gives its row of the batch.
    single = {k[7:]: outputs.pop(k) for k in list(outputs) if "single_" in k}
    steps = len(sentences[0])
    scale = max(
        float(np.abs(v).max())
        for k, v in outputs.items()
        if k != "sequence_len"
    )
    for key, value in single.items():
        row = outputs[key][:1, :steps] if value.ndim == 3 else outputs[key][:1]
        np.testing.assert_allclose(
            value, row, rtol=0, atol=tolerance * scale, err_msg=key
        )
    return outputs


@pytest.fixture(scope="module")
def sentences():
    return real_sentences()


@pytest.fixture(scope="module")
def elmo_layer(reference_weights):
    """The AllenNLP tiny reference biLM with a mix that is not the plain
    average."""
    options, weights = reference_weights("tiny")
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    layer = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)
    layer(keras_elmo.batch_to_ids([["warm", "up"]]))
    mix = layer.scalar_mixes[0]
    mix.scalar_parameters.assign(np.array([0.5, -0.25, 1.0], np.float32))
    mix.gamma.assign(1.75)
    return layer


@pytest.mark.parametrize("format", ["onnx", "litert"])
def test_random_tiny_bilm_is_exact(format, sentences, tmp_path):
    needs(format)
    bilm = tiny_bilm(7)
    path = tmp_path / f"tiny{SUFFIX[format]}"
    assert export_portable(bilm, str(path), format=format) == str(path)
    from keras_elmo.export.elmo_module import bilm_and_mix

    expected = reference(bilm, bilm_and_mix(bilm)[1], sentences)
    assert_close(run_clean(path, sentences, tmp_path), expected)


@pytest.mark.parametrize("format", ["onnx", "litert"])
def test_elmo_layer_mix_is_exported(format, elmo_layer, sentences, tmp_path):
    needs(format)
    path = tmp_path / f"layer{SUFFIX[format]}"
    export_portable(elmo_layer, path, format=format)
    expected = reference(elmo_layer.bilm, elmo_layer.scalar_mixes[0], sentences)
    outputs = run_clean(path, sentences, tmp_path)
    assert_close(outputs, expected)
    # Not the plain average: the mix weights travelled.
    plain = np.mean(elmo_layers(expected), axis=0)
    assert np.abs(outputs["elmo"] - plain).max() > 0.01


@pytest.mark.large
@pytest.mark.parametrize("format", ["onnx", "litert"])
def test_shipped_model_is_exact(format, sentences, tmp_path):
    needs(format)
    bilm = keras_elmo.BiLM.from_preset("elmo_small_en")
    path = tmp_path / f"small{SUFFIX[format]}"
    export_portable(bilm, path, format=format)
    from keras_elmo.export.elmo_module import bilm_and_mix

    expected = reference(bilm, bilm_and_mix(bilm)[1], sentences)
    assert_close(run_clean(path, sentences, tmp_path), expected)


@pytest.mark.large
@pytest.mark.parametrize("format", ["onnx", "litert"])
def test_shipped_model_int8_is_within_its_bound(format, sentences, tmp_path):
    needs(format)
    if format == "onnx":
        pytest.importorskip("onnxruntime")
    bilm = keras_elmo.BiLM.from_preset("elmo_small_en")
    exact = tmp_path / f"float{SUFFIX[format]}"
    int8 = tmp_path / f"int8{SUFFIX[format]}"
    export_portable(bilm, exact, format=format)
    export_portable(bilm, int8, format=format, quantize="int8")
    # int8 weights: the file is about a quarter of the float one.
    assert os.path.getsize(int8) < 0.3 * os.path.getsize(exact)
    from keras_elmo.export.elmo_module import bilm_and_mix

    expected = reference(bilm, bilm_and_mix(bilm)[1], sentences)
    outputs = run_clean(int8, sentences, tmp_path, INT8_TOLERANCE)
    assert sorted(outputs) == sorted(expected)
    np.testing.assert_array_equal(
        outputs["sequence_len"], expected["sequence_len"]
    )
    scale = max(
        float(np.abs(v).max())
        for k, v in expected.items()
        if k != "sequence_len"
    )
    worst = max(
        float(np.abs(outputs[k] - v).max())
        for k, v in expected.items()
        if k != "sequence_len"
    )
    # Quantized (not a float file under another name), and within bound.
    assert 1e-3 * scale < worst <= INT8_TOLERANCE * scale, worst / scale
    real = expected["elmo"].any(axis=-1)
    a, b = outputs["elmo"][real], expected["elmo"][real]
    cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1)
    cosine /= np.linalg.norm(b, axis=-1)
    assert cosine.min() >= INT8_MIN_COSINE, cosine.min()
    # Padding stays exactly zero.
    assert not outputs["elmo"][~real].any()


def test_reader_char_ids_equal_batch_to_ids(sentences):
    batch = sentences + [["<S>", "naïve", "x" * 60, "é" * 30, "</S>", "😀"]]
    np.testing.assert_array_equal(
        portable_runtime.batch_to_ids(batch), keras_elmo.batch_to_ids(batch)
    )
    assert portable_runtime.batch_to_ids([]).shape == (0, 0, 50)


def test_reader_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match=r"sentences\[0\]\[1\]` is an empty"):
        portable_runtime.batch_to_ids([["a", ""]])
    with pytest.raises(TypeError, match=r"sentences\[0\]\[0\]` must be a str"):
        portable_runtime.batch_to_ids([[3]])
    with pytest.raises(TypeError, match="received str"):
        portable_runtime.batch_to_ids("a b")
    other = tmp_path / "elmo.bin"
    other.write_bytes(b"x")
    with pytest.raises(ValueError, match=r"\.onnx or \.tflite; received"):
        portable_runtime.PortableElmo(other)
    with pytest.raises(FileNotFoundError, match="No exported ELMo file"):
        portable_runtime.PortableElmo(tmp_path / "missing.onnx")


def test_export_refuses_bad_arguments(tmp_path):
    bilm = tiny_bilm(7)
    with pytest.raises(ValueError, match="`format` must be one of") as e:
        export_portable(bilm, tmp_path / "x.onnx", format="tflite")
    assert e.value.argument == "format"
    with pytest.raises(ValueError, match="`quantize` must be None or") as e:
        export_portable(bilm, tmp_path / "x.onnx", quantize="int4")
    assert e.value.argument == "quantize"
    assert not (tmp_path / "x.onnx").exists()
    with pytest.raises(FileExistsError, match="is a directory"):
        export_portable(bilm, tmp_path, format="litert")
    existing = tmp_path / "x.tflite"
    existing.write_bytes(b"keep")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        export_portable(bilm, existing, format="litert", overwrite=False)
    assert existing.read_bytes() == b"keep"
    with pytest.raises(TypeError, match="must be a keras_elmo.BiLM"):
        export_portable(object(), tmp_path / "y.tflite", format="litert")


def test_cli_format_litert(reference_weights, sentences, tmp_path, capsys):
    needs("litert")
    options, weights = reference_weights("tiny")
    out = tmp_path / "elmo.tflite"
    args = ["export", "--options", options, "--weights", weights]
    args += ["--out", str(out), "--format", "litert"]
    assert main(args + ["--version", "1"]) == 2
    assert "--version applies to --format savedmodel only" in (
        capsys.readouterr().err
    )
    assert not out.exists()
    assert main(args) == 0
    assert "(litert)" in capsys.readouterr().out
    assert main(args) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    from keras_elmo.export.elmo_module import bilm_and_mix

    expected = reference(bilm, bilm_and_mix(bilm)[1], sentences)
    assert_close(run_clean(out, sentences, tmp_path), expected)


def test_cli_quantize_int8(reference_weights, sentences, tmp_path, capsys):
    needs("litert")
    options, weights = reference_weights("tiny")
    args = ["export", "--options", options, "--weights", weights]
    savedmodel = tmp_path / "sm"
    assert main(args + ["--out", str(savedmodel), "--quantize", "int8"]) == 2
    assert "--quantize applies to --format onnx or litert only" in (
        capsys.readouterr().err
    )
    assert not savedmodel.exists()
    out = tmp_path / "elmo_int8.tflite"
    args += ["--out", str(out), "--format", "litert", "--quantize", "int8"]
    assert main(args) == 0
    assert "(litert, int8)" in capsys.readouterr().out
    bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    from keras_elmo.export.elmo_module import bilm_and_mix

    expected = reference(bilm, bilm_and_mix(bilm)[1], sentences)
    outputs = run_clean(out, sentences, tmp_path, INT8_TOLERANCE)
    scale = float(np.abs(expected["elmo"]).max())
    worst = float(np.abs(outputs["elmo"] - expected["elmo"]).max())
    # Quantized, and within 1.5x the deviation measured for this tiny
    # random-weight model (0.072 of the largest `elmo` value).
    assert 1e-3 * scale < worst <= 0.11 * scale, worst / scale


def test_unicode_lexicon_models_are_refused(tmp_path):
    from tests import efml_reference

    bilm = keras_elmo.BiLM.from_preset(efml_reference.folder("char", "legacy"))
    with pytest.raises(ValueError, match="Unicode character lexicon"):
        export_portable(bilm, tmp_path / "efml.tflite", format="litert")
    assert not (tmp_path / "efml.tflite").exists()
