"""Reads an ONNX or LiteRT ELMo file with numpy and its runtime alone.

A standalone file: it imports neither TensorFlow, Keras nor the rest of
keras_elmo (importing `keras_elmo.export.portable_runtime` would import
the package, and so TensorFlow). Copy it next to your code, or load it
by path::

    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "portable_runtime", "/path/to/portable_runtime.py")
    portable_runtime = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(portable_runtime)

    elmo = portable_runtime.PortableElmo("elmo.onnx")   # or elmo.tflite
    out = elmo([["The", "cat", "sat", "."], ["Hello"]])
    out["elmo"].shape          # (2, 4, 2P); zeros past each sentence
    out["sequence_len"]        # array([4, 1], dtype=int32)

Needs `numpy` and `onnxruntime` for `.onnx` or `ai-edge-litert` for
`.tflite` (files written by `keras_elmo.export_portable` or
`keras-elmo export --format onnx|litert`).

The character ids are bilm-tf's (`keras_elmo.batch_to_ids`, AllenNLP's
`batch_to_ids`): each token's UTF-8 bytes (invalid code points dropped),
the first 48 kept, as `[BOW, bytes, EOW, PAD, ...] + 1`, 50 ids; `<S>` and
`</S>` get the sentence boundary ids; rows are right-padded with zeros.
"""

import os

import numpy as np

# === The bilm-tf character vocabulary (DESIGN.md "Character ids") ===
MAX_CHARS_PER_TOKEN = 50
MAX_TOKEN_BYTES = MAX_CHARS_PER_TOKEN - 2
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 256, 257, 258, 259, 260
ID_OFFSET = 1
CHAR_IDS = "char_ids"


def _boundary(char):
    ids = np.full([MAX_CHARS_PER_TOKEN], PAD_CHAR, dtype=np.int32)
    ids[0], ids[1], ids[2] = BOW_CHAR, char, EOW_CHAR
    return ids + ID_OFFSET


_SPECIAL = {"<S>": _boundary(BOS_CHAR), "</S>": _boundary(EOS_CHAR)}


def token_to_char_ids(token):
    """int32 `[50]`: one token's shifted character ids."""
    if token in _SPECIAL:
        return _SPECIAL[token].copy()
    data = token.encode("utf-8", "ignore")[:MAX_TOKEN_BYTES]
    ids = np.full([MAX_CHARS_PER_TOKEN], PAD_CHAR, dtype=np.int32)
    ids[0] = BOW_CHAR
    ids[1 : len(data) + 1] = np.frombuffer(data, dtype=np.uint8)
    ids[len(data) + 1] = EOW_CHAR
    return ids + ID_OFFSET


def batch_to_ids(sentences):
    """Lists of str tokens -> int32 `[B, T, 50]`, right-padded with 0.

    Raises:
        TypeError: `sentences` is not a list of lists of str.
        ValueError: an empty token (the model reads an all-zero row as
            padding, so it would end the sentence early).
    """
    if isinstance(sentences, (str, bytes, dict)) or not hasattr(
        sentences, "__len__"
    ):
        raise TypeError(
            "`sentences` must be a list of lists of str tokens, received "
            f"{type(sentences).__name__}."
        )
    steps = 0
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes, dict)) or not hasattr(
            sentence, "__len__"
        ):
            raise TypeError(
                f"`sentences[{i}]` must be a list of str tokens, received "
                f"{type(sentence).__name__}."
            )
        for j, token in enumerate(sentence):
            if not isinstance(token, str):
                raise TypeError(
                    f"`sentences[{i}][{j}]` must be a str token, received "
                    f"{type(token).__name__}."
                )
            if not token:
                raise ValueError(
                    f"`sentences[{i}][{j}]` is an empty token; remove it "
                    "(the model reads an empty token as the sentence's end)."
                )
        steps = max(steps, len(sentence))
    ids = np.zeros([len(sentences), steps, MAX_CHARS_PER_TOKEN], np.int32)
    for i, sentence in enumerate(sentences):
        for j, token in enumerate(sentence):
            ids[i, j] = token_to_char_ids(token)
    return ids


class PortableElmo:
    """An exported ELMo file and its runtime: token lists -> outputs.

    `PortableElmo(path)(sentences)` returns `{name: numpy array}`:
    `word_emb` `[B, T, P]`, `lstm_outputs1..L` and `elmo` `[B, T, 2P]`,
    `default` `[B, 2P]` and `sequence_len` `[B]`; `run(char_ids)` takes
    char ids directly.

    Args:
        path: a `.onnx` file (onnxruntime) or a `.tflite` file
            (ai-edge-litert).
        num_threads: int or None. Intra-op threads (None: the runtime's
            default).
    """

    def __init__(self, path, num_threads=None):
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"No exported ELMo file at {path!r}.")
        self.path = path
        if path.endswith(".onnx"):
            self._run = _onnx_runner(path, num_threads)
        elif path.endswith(".tflite"):
            self._run = _litert_runner(path, num_threads)
        else:
            raise ValueError(
                f"`path` must end in .onnx or .tflite; received {path!r}."
            )

    def __call__(self, sentences):
        return self.run(batch_to_ids(sentences))

    def run(self, char_ids):
        """int32 char ids `[B, T, 50]` -> `{name: array}`."""
        char_ids = np.ascontiguousarray(char_ids, dtype=np.int32)
        if char_ids.ndim != 3 or char_ids.shape[-1] != MAX_CHARS_PER_TOKEN:
            raise ValueError(
                "`char_ids` must have shape [B, T, 50]; received "
                f"{char_ids.shape}."
            )
        batch, steps = char_ids.shape[:2]
        if batch and steps:
            return self._run(char_ids)
        # No token at all: zeros of the outputs' widths, without calling
        # the runtime (LiteRT crashes on a zero-sized input).
        probe = self._run(token_to_char_ids("a")[None, None, :])
        shapes = {1: (batch,), 2: (batch,), 3: (batch, steps)}
        return {
            k: np.zeros(
                shapes[v.ndim] + v.shape[len(shapes[v.ndim]) :], v.dtype
            )
            for k, v in probe.items()
        }


def _onnx_runner(path, num_threads):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if num_threads:
        options.intra_op_num_threads = int(num_threads)
    session = onnxruntime.InferenceSession(
        path, options, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]

    def run(char_ids):
        return dict(zip(names, session.run(names, {CHAR_IDS: char_ids})))

    return run


def _litert_runner(path, num_threads):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=path, num_threads=num_threads)
    runner = interpreter.get_signature_runner()

    def run(char_ids):
        # The runner resizes its input to each call's shape.
        return {k: np.array(v) for k, v in runner(char_ids=char_ids).items()}

    return run
