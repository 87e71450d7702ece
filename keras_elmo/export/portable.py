"""`export_portable`: a biLM as one ONNX or LiteRT file, no TensorFlow needed.

The file takes character ids and returns the SavedModel signature's
outputs, for ONNX Runtime (`.onnx`) or LiteRT (`.tflite`, the
`ai-edge-litert` package):

| name | dtype, shape |
| --- | --- |
| input `char_ids` | int32 `[B, T, 50]`, rows right-padded with 0 |
| `word_emb` | float32 `[B, T, P]` |
| `lstm_outputs1` .. `lstm_outputs{L}` | float32 `[B, T, 2P]` |
| `elmo` | float32 `[B, T, 2P]`, the mix (as the SavedModel's) |
| `default` | float32 `[B, 2P]`, the mean of `elmo` over real tokens |
| `sequence_len` | int32 `[B]`, real tokens per row |

`B` and `T` are dynamic. Outputs are zero at padding positions. The
char ids are bilm-tf's (`keras_elmo.batch_to_ids`); the standalone reader
`keras_elmo/export/portable_runtime.py` maps token lists to them with
numpy alone.

Why a graph of its own: the biLM's TensorFlow forward uses ops that
neither converter handles (`UniqueV2` over rows, `SegmentMax`, tensor
lists of unknown element shape in the packed recurrence). This module
runs the same arithmetic with ops both converters know: the char-CNN as
a VALID convolution and a max over positions, the highway and projection
layers of the biLM itself, and each biLSTM layer as one `while` loop over
time (both directions at once, direction-major, the backward half
reversed over each row's length with `ReverseSequence`), collecting the
steps by concatenation. The weights are the biLM's (and the mix's).

`export_word2vec` writes the static half of the model for gensim and
other word2vec readers: layer 0's context-free vectors `x` (char-CNN,
highway, projection; `[P]`) of a vocabulary, in word2vec text format.
"""

import logging
import os

import numpy as np
import tensorflow as tf

from keras_elmo.export import signatures as sig
from keras_elmo.export.elmo_module import bilm_and_mix
from keras_elmo.models.bilm import elmo_layers
from keras_elmo.text import char_vocab
from keras_elmo.utils.atomic import atomic_write

logger = logging.getLogger(__name__)

ONNX = "onnx"
LITERT = "litert"
FORMATS = (ONNX, LITERT)
# The file name suffix each format's runtime expects.
SUFFIXES = {ONNX: ".onnx", LITERT: ".tflite"}
CHAR_IDS = "char_ids"
# ONNX opset: 17 is read by every onnxruntime of the last three years.
ONNX_OPSET = 17
INT8 = "int8"
QUANTIZE = (None, INT8)
EXTRA_HINT = "pip install 'keras-elmo[{}]'"
WORD2VEC = "word2vec"
# Tokens per char-CNN call in `export_word2vec`: bounds its memory (the
# `original` char-CNN holds about 0.2 MB of activations per token).
WORD2VEC_BATCH = 1024


class PortableForward(tf.Module):
    """The exported computation: char ids `[B, T, 50]` -> output dict.

    Args:
        bilm: a stateless `keras_elmo.BiLM` with bilm-tf character ids.
        mix: its built `ScalarMix`.
        per_direction: bool. Each LSTM matmul as two 2-D matmuls (one per
            direction) instead of one batched over directions: ONNX
            Runtime pre-packs a constant 2-D right-hand side once, but
            re-packs a batched one every call; LiteRT runs the float
            batched form with fewer ops per step (the same arithmetic),
            but its int8 (dynamic-range) batched matmul under the default
            XNNPACK delegate slows down call after call (from 3 ms to
            90 ms over 300 one-sentence calls of elmo_small_en, ai-edge-
            litert 2.3), while the 2-D form stays at 3 ms.
    """

    def __init__(self, bilm, mix, per_direction=False):
        super().__init__(name="elmo_portable")
        config = bilm.config
        if getattr(config, "has_char_lexicon", False):
            raise ValueError(
                "export_portable supports biLMs on bilm-tf character ids "
                "(AllenNLP, NLPL, keras-elmo models); this one has a "
                "Unicode character lexicon (ELMoForManyLangs), whose "
                "token mapping the portable reader does not implement. "
                "Export it with export_saved_model instead."
            )
        self._bilm, self._mix = bilm, mix
        self._per_direction = bool(per_direction)
        self.num_layers = int(config.num_layers)
        self.forward = tf.function(
            self._forward,
            input_signature=[
                tf.TensorSpec(
                    [None, None, char_vocab.MAX_CHARS_PER_TOKEN],
                    tf.int32,
                    name=CHAR_IDS,
                )
            ],
        )

    def _forward(self, char_ids):
        bilm = self._bilm
        mask = tf.reduce_any(char_ids > 0, axis=-1)  # [B, T]
        lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
        with_boundaries = _add_boundaries(char_ids, lengths)
        x = bilm.token_projection(
            bilm.highway(_char_cnn(bilm.char_cnn, with_boundaries))
        )
        x = tf.cast(x, tf.float32)  # [B, T + 2, P]
        layers = _bilstm(bilm.bilstm, x, lengths + 2, self._per_direction)
        steps = tf.shape(char_ids)[1]
        real = tf.expand_dims(tf.cast(mask, tf.float32), -1)

        def strip(sequence):  # drop <S> and </S>, zero the padding
            return sequence[:, 1 : steps + 1] * real

        outputs = {sig.WORD_EMB: strip(x)}
        for key, layer in zip(sig.lstm_output_keys(self.num_layers), layers):
            outputs[key] = strip(layer)
        elmo = self._mix(elmo_layers(outputs), mask=mask)
        outputs[sig.ELMO] = tf.cast(elmo, tf.float32)
        count = tf.maximum(tf.cast(lengths, tf.float32), 1.0)
        outputs[sig.MEAN] = tf.reduce_sum(
            outputs[sig.ELMO], axis=1
        ) / tf.expand_dims(count, -1)
        outputs[sig.SEQUENCE_LEN] = lengths
        return outputs


def _add_boundaries(char_ids, lengths):
    """`[B, T + 2, 50]`: `<S>`, the tokens, `</S>` after each row's last."""
    padded = tf.pad(char_ids, [[0, 0], [1, 1], [0, 0]])
    positions = tf.expand_dims(tf.range(tf.shape(padded)[1]), 0)  # [1, T+2]
    bos = tf.constant(char_vocab.BOS_TOKEN_IDS, tf.int32)
    eos = tf.constant(char_vocab.EOS_TOKEN_IDS, tf.int32)
    at_bos = tf.expand_dims(tf.equal(positions, 0), -1)
    at_eos = tf.expand_dims(
        tf.equal(positions, tf.expand_dims(lengths, 1) + 1), -1
    )
    out = tf.where(at_bos, bos, padded)
    return tf.where(at_eos, eos, out)


def _char_cnn(layer, char_ids):
    """`CharCNNEmbedding` as VALID convolutions and a max over positions
    (its backend-neutral path): `[B, T, 50]` -> `[B, T, filters]`."""
    shape = tf.shape(char_ids)
    slots = char_vocab.MAX_CHARS_PER_TOKEN
    table = tf.concat(
        [
            tf.zeros([1, layer.char_embedding_dim], tf.float32),
            tf.cast(layer.char_embeddings, tf.float32),
        ],
        axis=0,
    )
    flat = tf.reshape(char_ids, [-1, slots])
    chars = tf.gather(table, flat)  # [M, 50, dim]
    features = []
    for kernel, bias in zip(layer.kernels, layer.biases):
        kernel = tf.cast(kernel, tf.float32)
        conv = tf.nn.conv1d(chars, kernel, stride=1, padding="VALID")
        pooled = tf.reduce_max(conv, axis=1) + tf.cast(bias, tf.float32)
        if layer.activation == "relu":
            features.append(tf.nn.relu(pooled))
        else:
            features.append(tf.tanh(pooled))
    features = tf.concat(features, axis=-1)
    return tf.reshape(features, [shape[0], shape[1], layer.num_filters])


def _bilstm(bilstm, x, lengths, per_direction):
    """`ResidualBiLSTM` at inference: `[B, T, P]` -> `L` x `[B, T, 2P]`."""
    steps = tf.shape(x)[1]
    real = tf.cast(tf.sequence_mask(lengths, steps), tf.float32)
    real = tf.expand_dims(tf.expand_dims(real, 0), -1)  # [1, B, T, 1]
    clips = (bilstm.cell_clip, bilstm.projection_clip)
    layer_input = tf.stack([x, _reverse(x, lengths)])  # [2, B, T, P]
    outputs = []
    for layer in range(bilstm.num_layers):
        weights = [tf.cast(w, tf.float32) for w in bilstm._layer_weights(layer)]
        sequence = _recurrence(layer_input, weights, clips, per_direction)
        sequence = sequence * real
        if layer > 0 and bilstm.use_skip_connections:
            sequence = (sequence + layer_input) * real
        outputs.append(
            tf.concat([sequence[0], _reverse(sequence[1], lengths)], axis=-1)
        )
        layer_input = sequence
    return outputs


def _reverse(x, lengths):
    """Each row of `[B, T, D]` reversed over its first `lengths[b]` steps."""
    return tf.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0)


def _recurrence(inputs, weights, clips, per_direction):
    """One layer, both directions: `[2, B, T, P]` -> `[2, B, T, P]`.

    `h` and `c` start at zero; the steps past a row's length are computed
    and later zeroed (rows are right-padded, so they follow every real
    step and change no real output)."""
    kernel, recurrent, projection, bias = weights
    cell_clip, projection_clip = clips
    shape = tf.shape(inputs)
    batch, steps = shape[1], shape[2]
    width = tf.shape(kernel)[1]
    units, proj = projection.shape[1], projection.shape[2]

    if per_direction:  # unstacked outside the loop: 2-D constants
        kernel, recurrent, projection = (
            tf.unstack(w) for w in (kernel, recurrent, projection)
        )

    def each_direction(x, matrices):  # [2, N, K] x [2, K, M] -> [2, N, M]
        if not per_direction:
            return tf.matmul(x, matrices)
        return tf.stack([tf.matmul(x[d], matrices[d]) for d in (0, 1)])

    gates_in = each_direction(tf.reshape(inputs, [2, -1, width]), kernel)
    gates_in = tf.reshape(gates_in, [2, batch, steps, 4 * units])
    gates_in = gates_in + tf.expand_dims(tf.expand_dims(bias, 1), 1)
    gates_in = tf.transpose(gates_in, [2, 0, 1, 3])  # [T, 2, B, 4H]

    def clip(value, limit):
        if limit is None:
            return value
        return tf.clip_by_value(value, -float(limit), float(limit))

    def body(t, h, c, sequence):
        z = tf.gather(gates_in, t) + each_direction(h, recurrent)
        i, j, f, o = tf.split(z, 4, axis=-1)
        c_new = tf.sigmoid(i) * tf.tanh(j) + tf.sigmoid(f) * c
        c_new = clip(c_new, cell_clip)
        h_new = each_direction(tf.sigmoid(o) * tf.tanh(c_new), projection)
        h_new = clip(h_new, projection_clip)
        sequence = tf.concat([sequence, tf.expand_dims(h_new, 2)], axis=2)
        return t + 1, h_new, c_new, sequence

    h0 = tf.zeros(tf.stack([2, batch, proj]), tf.float32)
    c0 = tf.zeros(tf.stack([2, batch, units]), tf.float32)
    # No steps yet; a zero the converters cannot fold, so the loop's
    # output keeps a dynamic time axis when the graph is frozen (a
    # constant 0 there makes the LiteRT converter's `While` type [.., 0, ..]).
    none_yet = tf.minimum(steps, 0)
    s0 = tf.zeros(tf.stack([2, batch, none_yet, proj]), tf.float32)
    _, _, _, sequence = tf.while_loop(
        lambda t, *_: t < steps,
        body,
        (tf.constant(0), h0, c0, s0),
        shape_invariants=(
            tf.TensorShape([]),
            tf.TensorShape([2, None, proj]),
            tf.TensorShape([2, None, units]),
            tf.TensorShape([2, None, None, proj]),
        ),
    )
    return sequence


def export_portable(
    bilm_or_elmo_layer, path, format=ONNX, overwrite=True, quantize=None
):
    """Writes the biLM (and its mix) as one ONNX or LiteRT file.

    The file runs in ONNX Runtime (`format="onnx"`) or LiteRT
    (`format="litert"`, a `.tflite` flatbuffer) without TensorFlow or
    Keras: it takes `char_ids` int32 `[B, T, 50]` (dynamic `B` and `T`,
    rows right-padded with 0) and returns the SavedModel signature's
    outputs `word_emb`, `lstm_outputs1..L`, `elmo`, `default` and
    `sequence_len` (see this module's docstring). Within float32 rounding
    of `keras_elmo.BiLM` (tests/export/portable_test.py). Converting needs
    the optional converters: `pip install 'keras-elmo[onnx]'` (tf2onnx,
    onnx) for ONNX; LiteRT's converter ships with TensorFlow. Reading
    needs only numpy and `onnxruntime` or `ai-edge-litert`:
    `keras_elmo/export/portable_runtime.py` is a standalone reader.

    `elmo` is the ElmoLayer's first `ScalarMix` when an `ElmoLayer` is
    given, else the plain layer average (`s = 0`, `gamma = 1`), as in
    `export_saved_model`. Models with a Unicode character lexicon
    (ELMoForManyLangs) are refused.

    `quantize="int8"` stores the matmul and convolution weights as int8
    (dynamic-range quantization: one float scale per weight matrix or
    output channel, `w ~ scale * q` with `q` in [-127, 127]; activations
    are quantized per call and the outputs stay float32): LiteRT's
    converter with `Optimize.DEFAULT` and no representative data, or
    `onnxruntime.quantization.quantize_dynamic` (needs `onnxruntime` when
    exporting). About a quarter of the float file's size; the deviation
    from float32 is measured in `benchmarks/portable_int8.py`.

    Args:
        bilm_or_elmo_layer: a stateless `keras_elmo.BiLM` or a
            `keras_elmo.layers.ElmoLayer`.
        path: str. The output file.
        format: `"onnx"` or `"litert"`.
        overwrite: bool. Replace an existing file at `path`.
        quantize: None (float32) or `"int8"`.

    Returns:
        `path`.

    Raises:
        ValueError: an unknown `format` or `quantize`, or a model this
            export does not support (stateful, Unicode lexicon).
        TypeError: neither a `BiLM` nor an `ElmoLayer`.
        FileExistsError: `path` exists and `overwrite` is False, or is a
            directory.
        ImportError: the ONNX converter (or, for int8, onnxruntime) is
            not installed.
    """
    if format not in FORMATS:
        error = ValueError(
            f"`format` must be one of {', '.join(FORMATS)}; received "
            f"{format!r}."
        )
        error.argument = "format"
        raise error
    if quantize not in QUANTIZE:
        error = ValueError(
            f"`quantize` must be None or {INT8!r}; received {quantize!r}."
        )
        error.argument = "quantize"
        raise error
    path = _check_destination(path, overwrite)
    bilm, mix = bilm_and_mix(bilm_or_elmo_layer)
    module = PortableForward(
        bilm, mix, per_direction=format == ONNX or quantize == INT8
    )
    if format == ONNX:
        data = _to_onnx(module, quantize)
    else:
        data = _to_litert(module, quantize)
    with atomic_write(path, "wb") as f:
        f.write(data)
    logger.info(
        "Wrote %s (%s%s, %d bytes).",
        path,
        format,
        f", {quantize}" if quantize else "",
        len(data),
    )
    return path


def _check_destination(path, overwrite):
    """`path` as a str; refuses a directory, or an existing file unless
    `overwrite`."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise FileExistsError(
            f"{path!r} is a directory; `path` must name a file."
        )
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(
            f"{path!r} exists; pass `overwrite=True` to replace it."
        )
    return path


def export_word2vec(
    bilm_or_elmo_layer,
    path,
    vocabulary=None,
    overwrite=True,
    batch_size=WORD2VEC_BATCH,
):
    """Writes layer 0's context-free vectors of a vocabulary as word2vec text.

    ELMo's layer 0 depends on a token alone: `x = projection(highway(
    char_cnn(chars(token))))` (with a word branch, ELMoForManyLangs:
    `projection([word_embedding(word_id(token)); highway(char_cnn(..))])`),
    `[P]` float32, the biLM's `word_emb` output at any position the token
    takes (ELMo's layer 0 is `[x; x]`, `[2P]`). The file is UTF-8:

        N P
        token_1 v_1 ... v_P
        ...

    one line per token in vocabulary order, each value printed with 9
    significant digits, which a float32 parse returns bit-exact. Read it
    with `gensim.models.KeyedVectors.load_word2vec_format(path)`. The
    tokens are embedded `batch_size` at a time and streamed to the file,
    which is written beside `path` and renamed into place.

    Args:
        bilm_or_elmo_layer: a `keras_elmo.BiLM` or an `ElmoLayer` (its
            biLM; the mix does not touch layer 0).
        path: str. The output file.
        vocabulary: the tokens: a list of str, or the path of a UTF-8 file
            with one token per line (a bilm-tf `vocab.txt` works as it
            is: `<S>` and `</S>` get the sentence-boundary vectors the
            biLM uses). None: the model's own word lexicon, without its
            special entries (ELMoForManyLangs models with words); a
            bilm-tf biLM has none, so it needs `vocabulary`. Empty lines
            are skipped and repeats written once.
        overwrite: bool. Replace an existing file at `path`.
        batch_size: int. Tokens per char-CNN call.

    Returns:
        `path`.

    Raises:
        ValueError: no tokens, a token holding whitespace (the format
            separates words and values by a space: such a token cannot be
            written; the message names it and where it is), `vocabulary`
            None for a biLM without a word lexicon, a bad `batch_size`,
            or an undecodable vocabulary file.
        TypeError: a model that is neither a `BiLM` nor an `ElmoLayer`,
            or a vocabulary entry that is not a str.
        FileNotFoundError: the vocabulary file does not exist.
        FileExistsError: `path` exists and `overwrite` is False, or is a
            directory.
    """
    from keras_elmo.utils import check_positive_int

    check_positive_int("batch_size", batch_size)
    path = _check_destination(path, overwrite)
    bilm, _ = bilm_and_mix(bilm_or_elmo_layer)
    tokens = _word2vec_tokens(vocabulary, bilm.config)
    dim = int(bilm.config.projection_dim)
    with atomic_write(path, "wb") as f:
        f.write(f"{len(tokens)} {dim}\n".encode("utf-8"))
        for start in range(0, len(tokens), batch_size):
            chunk = tokens[start : start + batch_size]
            vectors = layer0_vectors(bilm, chunk)
            lines = (
                token + " " + " ".join(map("{:.9g}".format, row)) + "\n"
                for token, row in zip(chunk, vectors.tolist())
            )
            f.write("".join(lines).encode("utf-8"))
    logger.info(
        "Wrote %s (word2vec text, %d tokens x %d).", path, len(tokens), dim
    )
    return path


def layer0_vectors(bilm, tokens):
    """`[N, P]` float32: layer 0's `x` of each str token, alone."""
    inputs = bilm.encode_tokens(tf.constant(tokens, tf.string)[:, None])
    x = bilm.embed_tokens(inputs)[:, 0]
    return np.asarray(tf.cast(x, tf.float32))


def _word2vec_tokens(vocabulary, config):
    """The unique tokens to write, in order (see `export_word2vec`)."""
    if vocabulary is None:
        if not config.word_lexicon:
            raise ValueError(
                "`vocabulary` is None and this biLM has no word lexicon of "
                "its own (only ELMoForManyLangs models with word embeddings "
                "carry one); pass a list of tokens or the path of a file "
                "with one token per line, such as the model's vocab.txt."
            )
        specials = set(config.word_specials)
        pairs = sorted(config.word_lexicon, key=lambda pair: pair[1])
        entries = [
            (word, f"word lexicon id {i}")
            for word, i in pairs
            if i not in specials
        ]
        what = "the model's word lexicon"
    elif isinstance(vocabulary, (str, os.PathLike)):
        entries = _token_lines(os.fspath(vocabulary))
        what = f"vocabulary file {os.fspath(vocabulary)!r}"
    elif isinstance(vocabulary, bytes) or not hasattr(vocabulary, "__iter__"):
        raise TypeError(
            "`vocabulary` must be None, a list of str tokens or the path "
            f"of a token file; received {type(vocabulary).__name__}."
        )
    else:
        entries = []
        for i, token in enumerate(vocabulary):
            if not isinstance(token, str):
                raise TypeError(
                    f"`vocabulary[{i}]` must be a str; received "
                    f"{type(token).__name__} {token!r}."
                )
            entries.append((token, f"index {i}"))
        what = "`vocabulary`"
    tokens, seen, bad = [], set(), []
    for token, where in entries:
        if any(c.isspace() for c in token):
            bad.append(f"{token!r} ({where})")
        elif token and token not in seen:
            seen.add(token)
            tokens.append(token)
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        raise ValueError(
            f"{what} has {len(bad)} token(s) holding whitespace: "
            f"{', '.join(bad[:3])}{more}. The word2vec text format "
            "separates a word from its values by a space, so such a token "
            "cannot be written; remove it from the vocabulary."
        )
    if not tokens:
        raise ValueError(f"{what} has no tokens; expected at least one.")
    if len(tokens) < len(entries):
        logger.info(
            "%s: %d empty or repeated entries skipped.",
            what,
            len(entries) - len(tokens),
        )
    return tokens


def _token_lines(path):
    """`[(token, "line n")]` of a UTF-8 file, one token per line (`\n` or
    `\r\n` ended)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"Vocabulary file {path!r} does not exist (expected a UTF-8 "
            "file with one token per line)."
        )
    entries = []
    try:
        with open(path, encoding="utf-8", newline="") as f:
            for number, line in enumerate(f, start=1):
                token = line[:-1] if line.endswith("\n") else line
                token = token[:-1] if token.endswith("\r") else token
                entries.append((token, f"line {number}"))
    except UnicodeDecodeError as e:
        raise ValueError(
            f"Vocabulary file {path!r} is not UTF-8 text: {e}."
        ) from None
    return entries


def _to_onnx(module, quantize):
    try:
        import tf2onnx
    except ImportError as e:
        raise ImportError(
            "Exporting ONNX needs tf2onnx and onnx: " + EXTRA_HINT.format(ONNX)
        ) from e
    model, _ = tf2onnx.convert.from_function(
        module.forward,
        input_signature=module.forward.input_signature,
        opset=ONNX_OPSET,
    )
    _loop_constants_inside(model.graph)
    if quantize == INT8:
        return _quantize_onnx(model)
    return model.SerializeToString()


def _loop_constants_inside(graph):
    """Moves each `Loop`'s constant, unchanged carried weights into its body.

    tf2onnx passes the weights a `while` body reads as loop-carried
    values; ONNX Runtime then treats them as per-iteration data (no
    pre-packing, and the int8 quantizer does not see them as weights).
    A carried value that is a graph initializer, returned unchanged by the
    body (an `Identity` or the input itself) and whose final value nobody
    reads becomes an initializer of the body under its body-input name.
    The arithmetic is unchanged.
    """
    import onnx

    initializers = {t.name: t for t in graph.initializer}
    read = {name for node in graph.node for name in node.input}
    read |= {o.name for o in graph.output}
    for node in graph.node:
        if node.op_type != "Loop":
            continue
        body = next(a.g for a in node.attribute if a.name == "body")
        carried = len(node.input) - 2
        producers = {o: n for n in body.node for o in n.output}
        inputs, outputs = list(node.input[:2]), []
        body_inputs, body_outputs = list(body.input[:2]), [body.output[0]]
        for k in range(carried):
            outer, final = node.input[2 + k], node.output[k]
            b_in, b_out = body.input[2 + k], body.output[1 + k]
            producer = producers.get(b_out.name)
            unchanged = b_out.name == b_in.name or (
                producer is not None
                and producer.op_type == "Identity"
                and producer.input[0] == b_in.name
            )
            if outer in initializers and unchanged and final not in read:
                weight = onnx.TensorProto()
                weight.CopyFrom(initializers[outer])
                weight.name = b_in.name
                body.initializer.append(weight)
                if producer is not None and b_out.name != b_in.name:
                    body.node.remove(producer)
                continue
            inputs.append(outer)
            outputs.append(final)
            body_inputs.append(b_in)
            body_outputs.append(b_out)
        outputs += node.output[carried:]
        body_outputs += body.output[1 + carried :]
        for field, values in (
            (node.input, inputs),
            (node.output, outputs),
            (body.input, body_inputs),
            (body.output, body_outputs),
        ):
            kept = list(values)
            del field[:]
            field.extend(kept)
    read = {name for node in graph.node for name in node.input}
    for name, tensor in initializers.items():
        if name not in read:
            graph.initializer.remove(tensor)


def _quantize_onnx(model):
    """Dynamic-range int8 (`quantize_dynamic`, loop bodies included)."""
    import tempfile

    try:
        from onnxruntime.quantization import QuantType
        from onnxruntime.quantization import quantize_dynamic
    except ImportError as e:
        raise ImportError(
            "An int8 ONNX export needs onnxruntime: " + EXTRA_HINT.format(ONNX)
        ) from e
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "float.onnx")
        target = os.path.join(tmp, "int8.onnx")
        with open(source, "wb") as f:
            f.write(model.SerializeToString())
        quantize_dynamic(
            source,
            target,
            weight_type=QuantType.QInt8,
            extra_options={"EnableSubgraph": True},
        )
        with open(target, "rb") as f:
            return f.read()


def _to_litert(module, quantize):
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    # The weights as constants: variables would stay resource variables in
    # the file (LiteRT's READ_VARIABLE), never initialised by a reader.
    traced = module.forward.get_concrete_function()
    frozen = convert_variables_to_constants_v2(traced)
    keys = sorted(traced.structured_outputs)

    # The frozen function returns a flat list (sorted keys, as
    # `tf.nest.flatten` orders a dict); named again so that the file's
    # signature has the SavedModel's output names, not `output_0`...
    @tf.function(input_signature=module.forward.input_signature)
    def named(char_ids):
        return dict(zip(keys, tf.nest.flatten(frozen(char_ids))))

    holder = tf.Module()
    holder.named = named
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [named.get_concrete_function()], holder
    )
    # Builtin ops only: a file that needs TensorFlow's kernels (Select TF
    # ops) would not run in `ai-edge-litert` alone.
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    if quantize == INT8:
        # No representative dataset: dynamic range (int8 weights, float
        # activations quantized per call by the hybrid kernels).
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()
