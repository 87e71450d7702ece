#!/usr/bin/env python3
"""Runs simple_elmo 0.9.2 (ltgoslo) in its side venv and writes its outputs.

Run with the side venv's Python (`setup_simple_elmo.sh`); it never imports
keras_elmo, and keras_elmo never imports it. Commands:

    run_simple_elmo.py vectors --model-dir DIR --sentences S.json
        --batch-size 4 --out OUT.npz
  `ElmoModel().load(DIR, max_batch_size=...)` (DIR: options.json,
  model.hdf5, optional vocab.txt), then for layers all / top / average:
  `get_elmo_vectors(sentences, layers=...)` (warm-up on, its default) ->
  `vectors_{layers}`; `get_elmo_vectors(..., warmup=False, layers="all")`
  -> `vectors_all_no_warmup`; `get_elmo_vector_average(..., layers=L)`
  for top and average -> `sentence_{layers}`. Each call opens a new
  session, so each starts from zero LSTM states. Stored as float32
  (simple_elmo fills float64 arrays with float32 values: exact).

    run_simple_elmo.py make-checkpoint --options O.json --weights W.hdf5
        --softmax S.hdf5 --vocab vocab.txt --out-dir DIR
  builds simple_elmo's own training graph (`LanguageModel` under `lm`),
  sets every variable from the HDF5 files (bilm-tf's `dump_weights`
  names, and `softmax/W`, `softmax/b`) and saves a TF1 checkpoint with
  `tf.compat.v1.train.Saver`, plus options.json (n_tokens_vocab,
  bidirectional) and vocab.txt: a folder `load(DIR, full=True)` reads.

    run_simple_elmo.py substitutes --model-dir DIR --sentences S.json
        --batch-size 4 --topn 3 --out OUT.json
  `load(DIR, max_batch_size=..., full=True)`, then
  `get_elmo_substitutes([" ".join(s) for s in sentences], topn)`.

    run_simple_elmo.py bench --model-dir DIR --sentences S.json
        --batch-size 64 --threads 2
  a worker for benchmarks/simple_elmo_side_by_side.py: loads once, says
  `{"ready": ...}` on stdout, then per stdin line `round` times
  `get_elmo_vectors(sentences, warmup=False, layers="all",
  session=sess)` in one session (`warm`: the same on the first batch,
  untimed) opened with `--threads` threads; `default-round` times one
  default call, `get_elmo_vectors(sentences, layers="all")` with no
  session, as a user makes it (a fresh session with TensorFlow's default
  threads, its variables initialised, warm-up on the first batch);
  `outputs PATH` writes a fresh default call's (`warmup=True`,
  `layers="all"`) real-token vectors `[N, 3, 2P]` to PATH (.npy);
  `quit` reports the peak RSS. One JSON line answers each command.
"""

import argparse
import json
import os
import re
import sys
import time

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # LSTMCell of tf.compat.v1 needs it
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from simple_elmo import ElmoModel  # noqa: E402

tf.get_logger().setLevel("ERROR")
sys.path.insert(
    0,
    os.path.join(
        os.path.dirname(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        ),
        "benchmarks",
    ),
)
from peak_memory import peak_rss_mb  # noqa: E402


def _sentences(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _load(model_dir, batch_size, full=False):
    import logging

    model = ElmoModel()
    logging.getLogger("simple_elmo").setLevel(logging.WARNING)
    model.logger.setLevel(logging.WARNING)
    model.load(model_dir, max_batch_size=batch_size, full=full)
    return model


def cmd_vectors(args):
    sentences = _sentences(args.sentences)
    model = _load(args.model_dir, args.batch_size)
    out = {}
    for layers in ("all", "top", "average"):
        out[f"vectors_{layers}"] = model.get_elmo_vectors(
            sentences, layers=layers
        )
    out["vectors_all_no_warmup"] = model.get_elmo_vectors(
        sentences, warmup=False, layers="all"
    )
    for layers in ("top", "average"):
        out[f"sentence_{layers}"] = model.get_elmo_vector_average(
            sentences, layers=layers
        )
    out = {k: np.asarray(v, np.float32) for k, v in out.items()}
    out["lengths"] = np.array([len(s) for s in sentences], np.int32)
    out["batch_size"] = np.int32(args.batch_size)
    np.savez(args.out, **out)


def _hdf5_arrays(path):
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, obj: (
                arrays.__setitem__(name, obj[...])
                if isinstance(obj, h5py.Dataset)
                else None
            )
        )
    return arrays


def _checkpoint_name(variable_name):
    """simple_elmo's training-graph variable -> dump_weights' HDF5 name."""
    name = re.sub(r":0$", "", variable_name)
    name = re.sub(r"^lm/", "", name)
    name = re.sub(
        r"/rnn/multi_rnn_cell/cell_(\d+)/", r"/RNN/MultiRNNCell/Cell\1/", name
    )
    name = re.sub(r"/lstm_cell/projection/kernel$", "/LSTMCell/W_P_0", name)
    name = re.sub(r"/lstm_cell/kernel$", "/LSTMCell/W_0", name)
    name = re.sub(r"/lstm_cell/bias$", "/LSTMCell/B", name)
    return name


def cmd_make_checkpoint(args):
    from simple_elmo.training import LanguageModel

    with open(args.options, encoding="utf-8") as f:
        options = json.load(f)
    with open(args.vocab, encoding="utf-8") as f:
        vocab = f.read()
    arrays = _hdf5_arrays(args.weights)
    arrays.update(_hdf5_arrays(args.softmax))
    options["n_tokens_vocab"] = int(arrays["softmax/W"].shape[0])
    options["bidirectional"] = True
    options["dropout"] = 0.0
    options["char_cnn"]["n_characters"] = 261
    tf.compat.v1.disable_eager_execution()
    graph_options = dict(options, batch_size=1, unroll_steps=1)
    with tf.compat.v1.Session() as sess:
        with tf.compat.v1.variable_scope("lm"):
            LanguageModel(graph_options, False)
        assigned = set()
        for var in tf.compat.v1.global_variables():
            name = _checkpoint_name(var.name)
            if name not in arrays:
                raise SystemExit(f"no value for graph variable {var.name}")
            value = arrays[name]
            if tuple(var.shape) != value.shape:
                raise SystemExit(
                    f"{var.name}: graph shape {var.shape}, file {value.shape}"
                )
            var.load(value, sess)
            assigned.add(name)
        unused = sorted(set(arrays) - assigned)
        if unused:
            raise SystemExit(f"datasets not in the graph: {unused}")
        os.makedirs(args.out_dir, exist_ok=True)
        tf.compat.v1.train.Saver(save_relative_paths=True).save(
            sess,
            os.path.join(args.out_dir, "model.ckpt"),
            write_meta_graph=False,  # restoring needs only the variables
        )
    with open(os.path.join(args.out_dir, "options.json"), "w") as f:
        json.dump(options, f, indent=1)
    with open(os.path.join(args.out_dir, "vocab.txt"), "w") as f:
        f.write(vocab)


def cmd_substitutes(args):
    sentences = _sentences(args.sentences)
    model = _load(args.model_dir, args.batch_size, full=True)
    raw = [" ".join(s) for s in sentences]
    result = model.get_elmo_substitutes(raw, topn=args.topn)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, ensure_ascii=False)


def _reply(payload):
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def cmd_bench(args):
    from simple_elmo.elmo import weight_layers

    sentences = _sentences(args.sentences)
    tokens = sum(len(s) for s in sentences)
    start = time.perf_counter()
    model = _load(args.model_dir, args.batch_size)
    config = tf.compat.v1.ConfigProto(
        intra_op_parallelism_threads=args.threads,
        inter_op_parallelism_threads=args.threads,
    )
    sess = tf.compat.v1.Session(config=config)
    # The documented external-session path of get_elmo_vectors: the
    # caller builds the output op and initialises the variables once.
    model.elmo_sentence_input = weight_layers(
        "input", model.sentence_embeddings_op, use_layers="all"
    )
    sess.run(tf.compat.v1.global_variables_initializer())
    _reply({"ready": True, "load_s": time.perf_counter() - start})
    for line in sys.stdin:
        command = line.split()
        if not command:
            continue
        if command[0] == "warm":
            model.get_elmo_vectors(
                sentences[: args.batch_size],
                warmup=False,
                layers="all",
                session=sess,
            )
            _reply({"warm": True})
        elif command[0] == "round":
            start = time.perf_counter()
            model.get_elmo_vectors(
                sentences, warmup=False, layers="all", session=sess
            )
            seconds = time.perf_counter() - start
            _reply({"seconds": seconds, "tokens": tokens})
        elif command[0] == "default-round":
            # As a user calls it: no session (a fresh one per call, its
            # variables initialised), warm-up on the first batch first.
            start = time.perf_counter()
            model.get_elmo_vectors(sentences, layers="all")
            seconds = time.perf_counter() - start
            _reply({"seconds": seconds, "tokens": tokens})
        elif command[0] == "outputs":
            # A fresh default call, as a user makes it: new session, zero
            # states, warm-up on the first batch, then every batch.
            vectors = model.get_elmo_vectors(sentences, layers="all")
            real = np.concatenate(
                [
                    np.transpose(vectors[b, :, : len(s)], (1, 0, 2))
                    for b, s in enumerate(sentences)
                ]
            ).astype(np.float32)
            padding = [
                float(np.abs(vectors[b, k, len(s) :]).max(initial=0.0))
                for b, s in enumerate(sentences)
                for k in range(vectors.shape[1])
            ]
            np.save(command[1], real)
            _reply({"written": command[1], "padding_max_abs": max(padding)})
        elif command[0] == "quit":
            _reply({"peak_rss_mb": peak_rss_mb()})
            return
        else:
            _reply({"error": f"unknown command {command[0]!r}"})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("vectors")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--sentences", required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--out", required=True)
    p = commands.add_parser("make-checkpoint")
    for flag in ("--options", "--weights", "--softmax", "--vocab", "--out-dir"):
        p.add_argument(flag, required=True)
    p = commands.add_parser("substitutes")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--sentences", required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--topn", type=int, default=3)
    p.add_argument("--out", required=True)
    p = commands.add_parser("bench")
    p.add_argument("--model-dir", required=True)
    p.add_argument("--sentences", required=True)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    {
        "vectors": cmd_vectors,
        "make-checkpoint": cmd_make_checkpoint,
        "substitutes": cmd_substitutes,
        "bench": cmd_bench,
    }[args.command](args)


if __name__ == "__main__":
    main()
