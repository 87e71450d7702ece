"""The keras_elmo worker of `benchmarks/simple_elmo_side_by_side.py`.

    python benchmarks/simple_elmo_worker.py
        --mode stateless|stateless-every-product|stateless-sorted|stateful
        --options O.json --weights W.hdf5 --sentences S.json
        [--batch-size 64] [--threads 2]
    python benchmarks/simple_elmo_worker.py --mode portable --file F
        --sentences S.json [--batch-size 64] [--threads 2]
    python benchmarks/simple_elmo_worker.py --mode export --out-dir DIR
        --options O.json --weights W.hdf5
    python benchmarks/simple_elmo_worker.py --mode savedmodel --file DIR
        --sentences S.json [--threads 2]

Speaks the protocol of `tools/simple_elmo_ref/run_simple_elmo.py bench`
(one JSON line per command on stdout): `{"ready": ...}` once loaded,
then for each stdin line

- `warm`: one untimed pass over the first batch (traces the function);
- `round`: embeds every sentence in batches of `--batch-size`, file
  order, and answers the seconds;
- `outputs PATH`: writes the real-token vectors `[N, L + 1, 2P]` float32
  (sentences concatenated in order) to PATH (.npy);
- `latency START COUNT`: embeds sentences START..START+COUNT-1 one at a
  time, each a call of its own, and answers each call's milliseconds
  (`ms`, wall) and this process's CPU milliseconds (`cpu_ms`, all its
  threads) (`portable` and `savedmodel` modes; the `elmo` output);
- `elmo PATH INDEX`: writes that one-sentence call's `elmo` `[1, n, 2P]`
  to PATH (.npy);
- `quit`: answers the peak RSS and exits.

Modes, all through `keras_elmo.Embedder(bilm, batch_size=...)` (string
tokens in, one `[L + 1, n, 2P]` array per sentence out, a `tf.function`
traced once):

- `stateless`: the default, `embed(batch)` for each batch in file order
  (the batches simple_elmo runs);
- `stateless-every-product`: `stateless` with the first layer's input
  products computed at every position
  (`PackedLayout.shares_token_products = False`), as before they were
  shared per distinct token: the gain of that sharing, side by side;
- `stateless-sorted`: the default, `embed(sentences)` at once, which
  sorts the sentences by length into its batches (less padding);
- `stateful`: `Embedder(..., warmup=True).embed(sentences)`, the opt-in
  warm-up that reproduces simple_elmo (reset, the first batch once, then
  every batch in order carrying states, eager calls).

Portable exports (`--side-by-side --portable`):

- `export`: writes `onnx.onnx`, `onnx_int8.onnx`, `litert.tflite` and
  `litert_int8.tflite` (`keras_elmo.export_portable`, float32 and
  `quantize="int8"`) of the weights into `--out-dir`, answers one JSON
  line (seconds and bytes per file) and exits;
- `portable`: the file `--file` through
  `keras_elmo/export/portable_runtime.py` loaded by path (numpy and
  onnxruntime or ai-edge-litert; TensorFlow is never imported), with
  `--threads` intra-op threads, on each batch in file order, each
  sentence's `[L + 1, n, 2P]` cut from the outputs as `Embedder.embed`
  returns them (layer 0 `[word_emb; word_emb]`).

One-sentence latency (`benchmarks/portable_latency.py`) uses `portable`
and `savedmodel`: the SavedModel folder `--file` loaded with
`tf.saved_model.load`, called through its `tokens` signature on
`--threads` TensorFlow threads, answering `latency` and `elmo` only.
"""

import argparse
import json
import os
import sys
import time

from peak_memory import peak_rss_mb

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _reply(payload):
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--mode",
        choices=(
            "stateless",
            "stateless-every-product",
            "stateless-sorted",
            "stateful",
            "portable",
            "export",
            "savedmodel",
        ),
    )
    parser.add_argument("--options")
    parser.add_argument("--weights")
    parser.add_argument("--sentences")
    parser.add_argument(
        "--file",
        help="--mode portable: the .onnx/.tflite; savedmodel: the folder",
    )
    parser.add_argument("--out-dir", help="--mode export: where to write")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.mode == "export":
        return export(args)
    if args.mode == "portable":
        start = time.perf_counter()
        embed, one = portable_embed(args)
        return serve(args, embed, time.perf_counter() - start, one)
    if args.mode == "savedmodel":
        start = time.perf_counter()
        one = saved_model_one(args)
        return serve(args, None, time.perf_counter() - start, one)

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras_elmo

    if args.mode == "stateless-every-product":
        from keras_elmo.ops.bilstm_layouts import PackedLayout

        PackedLayout.shares_token_products = False

    start = time.perf_counter()
    bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
    warmup = True if args.mode == "stateful" else None
    embedder = keras_elmo.Embedder(
        bilm, batch_size=args.batch_size, warmup=warmup
    )

    def embed(batch_list):
        if args.mode in ("stateless", "stateless-every-product"):
            return [v for batch in batch_list for v in embedder.embed(batch)]
        return embedder.embed([s for batch in batch_list for s in batch])

    return serve(args, embed, time.perf_counter() - start)


def portable_embed(args):
    """`embed(batch_list)` over the exported file `--file`, no TensorFlow."""
    import importlib.util

    import numpy as np

    path = os.path.join(REPO, "keras_elmo", "export", "portable_runtime.py")
    spec = importlib.util.spec_from_file_location("portable_runtime", path)
    runtime = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runtime)
    reader = runtime.PortableElmo(args.file, num_threads=args.threads)

    def embed(batch_list):
        vectors = []
        for batch in batch_list:
            out = reader(batch)
            layers = [np.concatenate([out["word_emb"]] * 2, axis=-1)]
            count = sum(key.startswith("lstm_outputs") for key in out)
            layers += [out[f"lstm_outputs{i}"] for i in range(1, count + 1)]
            stacked = np.stack(layers, axis=1)  # [B, L + 1, T, 2P]
            vectors += [stacked[i, :, : len(s)] for i, s in enumerate(batch)]
        return vectors

    def one(tokens):
        return reader([tokens])["elmo"]

    return embed, one


def saved_model_one(args):
    """`one(tokens)` -> `elmo` `[1, n, 2P]` through the SavedModel `--file`."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    signature = tf.saved_model.load(args.file).signatures["tokens"]

    def one(tokens):
        out = signature(
            tokens=tf.constant([tokens]),
            sequence_len=tf.constant([len(tokens)], tf.int32),
        )
        return out["elmo"].numpy()

    return one


def export(args):
    """`--mode export`: the four portable files of the weights."""
    import keras_elmo

    bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
    written = {}
    for fmt, suffix in (("onnx", ".onnx"), ("litert", ".tflite")):
        for quantize in (None, "int8"):
            name = fmt + ("_int8" if quantize else "")
            path = os.path.join(args.out_dir, name + suffix)
            start = time.perf_counter()
            keras_elmo.export_portable(
                bilm, path, format=fmt, quantize=quantize
            )
            written[name] = {
                "path": path,
                "bytes": os.path.getsize(path),
                "export_s": round(time.perf_counter() - start, 1),
            }
    _reply({"exported": written})


def serve(args, embed, load_s, one=None):
    """Answers the commands of stdin (the module docstring) with `embed`
    (batches; None: this mode has none) and `one` (one sentence)."""
    import numpy as np

    with open(args.sentences, encoding="utf-8") as f:
        sentences = json.load(f)
    tokens = sum(len(s) for s in sentences)
    batches = [
        sentences[i : i + args.batch_size]
        for i in range(0, len(sentences), args.batch_size)
    ]
    _reply({"ready": True, "load_s": load_s})
    for line in sys.stdin:
        command = line.split()
        if not command:
            continue
        if command[0] in ("warm", "round", "outputs") and embed is None:
            _reply({"error": f"--mode {args.mode} answers latency only"})
        elif command[0] == "warm":
            embed(batches[:1])
            _reply({"warm": True})
        elif command[0] == "round":
            start = time.perf_counter()
            embed(batches)
            seconds = time.perf_counter() - start
            _reply({"seconds": seconds, "tokens": tokens})
        elif command[0] == "outputs":
            vectors = embed(batches)
            real = np.concatenate([np.transpose(v, (1, 0, 2)) for v in vectors])
            np.save(command[1], real.astype(np.float32))
            _reply({"written": command[1]})
        elif command[0] == "latency" and one is not None:
            start, count = int(command[1]), int(command[2])
            wall, cpu = [], []
            for tokens in sentences[start : start + count]:
                began, began_cpu = time.perf_counter(), time.process_time()
                out = one(tokens)
                wall.append((time.perf_counter() - began) * 1e3)
                cpu.append((time.process_time() - began_cpu) * 1e3)
                if out.shape[:2] != (1, len(tokens)):
                    raise AssertionError(f"elmo of shape {out.shape}")
            _reply({"ms": wall, "cpu_ms": cpu})
        elif command[0] == "elmo" and one is not None:
            np.save(command[1], one(sentences[int(command[2])]))
            _reply({"written": command[1]})
        elif command[0] == "quit":
            _reply({"peak_rss_mb": peak_rss_mb()})
            return
        else:
            _reply({"error": f"unknown command {command[0]!r}"})


if __name__ == "__main__":
    main()
