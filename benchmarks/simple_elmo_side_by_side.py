"""keras_elmo vs simple_elmo 0.9.2 on the same weights and text, alternately.

    bash tools/simple_elmo_ref/setup_simple_elmo.sh      # the side venv
    python benchmarks/simple_elmo_side_by_side.py \\
        [--text ../shared/data/en_pd_lm/test.txt.gz] [--lines 256]
        [--rounds 3] [--batch-size 64] [--threads 2]
        [--out benchmarks/results/simple_elmo_side_by_side.json]
    python benchmarks/simple_elmo_side_by_side.py --portable [...]
        [--out benchmarks/results/portable_throughput.json]

Five worker processes (six passes) load the SAME `original` weights
(seeded random weights in the published format, from
`shared/ref/make_weights.py`, generated into `/tmp/elmo_ref/w` when
missing) and the same sentences
(`benchmarks/real_text.py`: the file's first `--lines` lines of >= 3
tokens cut at 64, natural lengths, file order, batches of
`--batch-size`), each with `--threads` threads:

- `simple_elmo`: its `ElmoModel.get_elmo_vectors(layers="all")` in its
  side venv (`tools/simple_elmo_ref/run_simple_elmo.py bench`), one
  session for all rounds (its external-session path, its fastest);
- `simple_elmo/default-call`: the same process's `get_elmo_vectors(
  sentences, layers="all")` with no session, as its README calls it: a
  fresh session per call (variables initialised, TensorFlow's default
  threads: one per core) and a warm-up pass on the first batch;
- `keras_elmo/stateless`: the default, `keras_elmo.Embedder.embed` on
  each batch in file order (simple_elmo's batches);
- `keras_elmo/stateless-every-product`: the same with the first layer's
  input products at every position, not once per distinct token (the
  gain of `keras_elmo.ops.distinct_input_products`, side by side);
- `keras_elmo/stateless-sorted`: the default on all the sentences at
  once, which sorts them by length into its batches;
- `keras_elmo/stateful`: `Embedder(..., warmup=True)`, the opt-in
  warm-up that reproduces simple_elmo.

After one untimed batch each, every round times one pass of each worker
over all the sentences, the workers taking turns, with the 1-minute load
average before each pass. tokens/s = real tokens / seconds. The ratio of
medians (over rounds) comes with the min-max of the per-round ratios.
Then the outputs: simple_elmo's default call (fresh session, warm-up on
the first batch) against keras_elmo stateful (same warm-up) and
stateless, on every real token: max |difference| / max |simple_elmo|,
per layer; and simple_elmo's largest padding value. Last, the peak RSS
of each worker (`VmHWM`: TensorFlow, the weights, the outputs).

`--portable` times, in the same way and in one run, the portable
exports of the same weights instead of keras_elmo's variants, on the
shipped elmo_small_en (`--model-dir`; not `original`, whose ONNX
conversion needs more memory than a 23 GB machine has):
`simple_elmo` (its kept session), `keras_elmo/stateless` (the TensorFlow
path) and the ONNX and LiteRT files, float32 and int8
(`keras_elmo.export_portable(..., quantize="int8")`), each read by
`keras_elmo/export/portable_runtime.py` in a worker that never imports
TensorFlow (`simple_elmo_worker.py --mode portable`), batches of
`--batch-size` in file order, char ids made from the strings inside the
timing, `--threads` intra-op threads. The files are exported first (one
worker, `--mode export`). Agreement: each file's outputs against
keras_elmo stateless on every real token. The goal: an int8 file at
`PORTABLE_TARGET` times simple_elmo's tokens/s.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import provenance  # noqa: E402
import real_text  # noqa: E402

SIDE_PYTHON = os.path.expanduser(
    "~/.cache/keras_elmo_side/simple_elmo/bin/python"
)
SHARED_REF = os.path.join(REPO, "..", "shared", "ref")
WORKERS = (
    "simple_elmo",
    "simple_elmo/default-call",
    "keras_elmo/stateless",
    "keras_elmo/stateless-every-product",
    "keras_elmo/stateless-sorted",
    "keras_elmo/stateful",
)
TARGET = 3.0  # keras_elmo stateless tokens/s over simple_elmo's (issue 33)
PORTABLE = ("onnx", "onnx_int8", "litert", "litert_int8")
PORTABLE_WORKERS = ("simple_elmo", "keras_elmo/stateless") + tuple(
    f"portable/{name}" for name in PORTABLE
)
PORTABLE_TARGET = 3.0  # an int8 file's tokens/s over simple_elmo's
# `--portable` runs the shipped model: converting `original` to ONNX was
# killed for memory on a 23 GB machine (tf2onnx past 16 GB resident).
SHIPPED = os.path.join(REPO, "keras_elmo", "presets", "elmo_small_en")
# pass name -> (worker process, command): simple_elmo's two call paths
# share one process (one copy of its weights in memory).
PASSES = {"simple_elmo/default-call": ("simple_elmo", "default-round")}


class Worker:
    """A child process answering one JSON line per command."""

    def __init__(self, name, command, env=None):
        self.name = name
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.ready = self.read()

    def read(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.name} exited early")
        return json.loads(line)

    def ask(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self.read()
        if "error" in answer:
            raise RuntimeError(f"worker {self.name}: {answer['error']}")
        return answer

    def quit(self):
        answer = self.ask("quit")
        self.process.wait(timeout=120)
        return answer


def original_weights(weights_dir):
    options = os.path.join(weights_dir, "original_options.json")
    weights = os.path.join(weights_dir, "original_weights.hdf5")
    if not os.path.exists(weights):
        subprocess.run(
            [
                sys.executable,
                os.path.join(SHARED_REF, "make_weights.py"),
                "original",
                "--out-dir",
                weights_dir,
            ],
            check=True,
        )
    return options, weights


def export_portable_files(options, weights, tmp):
    """`{name: {"path", "bytes", "export_s"}}` of the four exports."""
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    command = [sys.executable, os.path.join(HERE, "simple_elmo_worker.py")]
    command += ["--mode", "export", "--out-dir", tmp]
    command += ["--options", options, "--weights", weights]
    done = subprocess.run(
        command, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])["exported"]


def start_workers(args, options, weights, sentences_path, tmp, files=None):
    model_dir = os.path.join(tmp, "simple_elmo_model")
    os.makedirs(model_dir)
    os.symlink(
        os.path.abspath(options), os.path.join(model_dir, "options.json")
    )
    os.symlink(os.path.abspath(weights), os.path.join(model_dir, "model.hdf5"))
    common = [
        "--sentences",
        sentences_path,
        "--batch-size",
        str(args.batch_size),
        "--threads",
        str(args.threads),
    ]
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    workers = {
        "simple_elmo": Worker(
            "simple_elmo",
            [
                args.side_python,
                os.path.join(REPO, "tools/simple_elmo_ref/run_simple_elmo.py"),
                "bench",
                "--model-dir",
                model_dir,
            ]
            + common,
        )
    }
    modes = ["stateless"] if files else [n.split("/")[1] for n in WORKERS[2:]]
    for name, exported in (files or {}).items():
        workers[f"portable/{name}"] = Worker(
            f"portable/{name}",
            [
                sys.executable,
                os.path.join(HERE, "simple_elmo_worker.py"),
                "--mode",
                "portable",
                "--file",
                exported["path"],
            ]
            + common,
            env=env,
        )
    for mode in modes:
        workers[f"keras_elmo/{mode}"] = Worker(
            f"keras_elmo/{mode}",
            [
                sys.executable,
                os.path.join(HERE, "simple_elmo_worker.py"),
                "--mode",
                mode,
                "--options",
                options,
                "--weights",
                weights,
            ]
            + common,
            env=env,
        )
    return workers


def agreement(ours, reference):
    """Per layer and overall: max |ours - ref| and that over max |ref|."""
    import numpy as np

    out = {}
    for layer in range(reference.shape[1]):
        diff = float(np.abs(ours[:, layer] - reference[:, layer]).max())
        scale = float(np.abs(reference[:, layer]).max())
        out[f"layer{layer}"] = {
            "max_abs_diff": diff,
            "relative": round(diff / scale, 9),
        }
    diff = float(np.abs(ours - reference).max())
    out["relative"] = round(diff / float(np.abs(reference).max()), 9)
    out["max_abs_diff"] = diff
    return out


def summarise(rounds, names, bases=2):
    speeds = {n: [r[n]["tokens_per_s"] for r in rounds] for n in names}
    medians = {n: round(statistics.median(v), 1) for n, v in speeds.items()}
    ratios = {}
    for base in names[:bases]:
        for name in names[bases:]:
            per_round = [
                r[name]["tokens_per_s"] / r[base]["tokens_per_s"]
                for r in rounds
            ]
            ratios[f"{name} vs {base}"] = {
                "ratio_of_medians": round(medians[name] / medians[base], 3),
                "per_round_min": round(min(per_round), 3),
                "per_round_max": round(max(per_round), 3),
            }
    return medians, ratios


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--text", default=os.path.join(real_text.EN_PD_LM, "test.txt.gz")
    )
    parser.add_argument("--lines", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--side-python", default=SIDE_PYTHON)
    parser.add_argument("--weights-dir", default=real_text.WEIGHTS_DIR)
    parser.add_argument(
        "--portable",
        action="store_true",
        help="time the ONNX and LiteRT exports (float32, int8) instead of "
        "keras_elmo's variants",
    )
    parser.add_argument(
        "--model-dir",
        default=SHIPPED,
        help="--portable: the options.json + weights.hdf5 folder every "
        "worker loads (default: the shipped elmo_small_en)",
    )
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.out is None:
        name = (
            "portable_throughput"
            if args.portable
            else "simple_elmo_side_by_side"
        )
        args.out = os.path.join(HERE, "results", name + ".json")
    if args.portable:
        return main_portable(args)
    import numpy as np

    sentences = real_text.read_sentences(args.text, args.lines)
    groups = [
        sentences[i : i + args.batch_size]
        for i in range(0, len(sentences), args.batch_size)
    ]
    options, weights = original_weights(args.weights_dir)
    record = {
        "provenance": provenance.provenance(written=[args.out]),
        "what": (
            "tokens/s, peak RSS and output agreement of simple_elmo 0.9.2 "
            "(get_elmo_vectors, layers='all', side venv with tf-keras, "
            "TF_USE_LEGACY_KERAS=1) and keras_elmo (stateless default; "
            "stateful after simple_elmo's warm-up) on the same `original` "
            "random weights and real sentences, file order, alternating "
            "worker processes; ratio = median keras_elmo tokens/s over "
            "median simple_elmo tokens/s, range = min-max per-round ratio"
        ),
        "text": os.path.relpath(args.text, REPO),
        "lines": args.lines,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "workload": real_text.describe(groups),
        "target": {"stateless_vs_simple_elmo": TARGET},
    }
    with tempfile.TemporaryDirectory() as tmp:
        sentences_path = os.path.join(tmp, "sentences.json")
        with open(sentences_path, "w", encoding="utf-8") as f:
            json.dump(sentences, f)
        workers = start_workers(args, options, weights, sentences_path, tmp)
        record["load_s"] = {n: w.ready["load_s"] for n, w in workers.items()}
        for worker in workers.values():
            worker.ask("warm")
        rounds = []
        for round_ in range(args.rounds):
            passes = {}
            order = WORKERS if round_ % 2 == 0 else WORKERS[::-1]
            for name in order:
                load = round(os.getloadavg()[0], 2)
                worker, command = PASSES.get(name, (name, "round"))
                answer = workers[worker].ask(command)
                passes[name] = {
                    "seconds": round(answer["seconds"], 3),
                    "tokens_per_s": round(
                        answer["tokens"] / answer["seconds"], 1
                    ),
                    "load_before": load,
                }
            rounds.append(passes)
            print(json.dumps({"round": round_ + 1, **passes}), flush=True)
        outputs = {}
        for name, worker in workers.items():
            path = os.path.join(tmp, name.replace("/", "_") + ".npy")
            answer = worker.ask(f"outputs {path}")
            if name == "simple_elmo":
                record["simple_elmo_padding_max_abs"] = answer[
                    "padding_max_abs"
                ]
            outputs[name] = np.load(path)
        record["peak_rss_mb"] = {
            n: round(w.quit()["peak_rss_mb"], 1) for n, w in workers.items()
        }
    reference = outputs["simple_elmo"]
    record["agreement"] = {
        "stateful after the same warm-up": agreement(
            outputs["keras_elmo/stateful"], reference
        ),
        "stateless": agreement(outputs["keras_elmo/stateless"], reference),
        "stateless, every product": agreement(
            outputs["keras_elmo/stateless-every-product"], reference
        ),
        "stateless, sorted batches": agreement(
            outputs["keras_elmo/stateless-sorted"], reference
        ),
    }
    medians, ratios = summarise(rounds, list(WORKERS))
    record["summary"] = {"tokens_per_s_median": medians, "ratios": ratios}
    shared, every = "keras_elmo/stateless", "keras_elmo/stateless-every-product"
    per_round = [
        r[shared]["tokens_per_s"] / r[every]["tokens_per_s"] for r in rounds
    ]
    record["summary"]["first_layer_products_shared_vs_every"] = {
        "ratio_of_medians": round(medians[shared] / medians[every], 3),
        "per_round_min": round(min(per_round), 3),
        "per_round_max": round(max(per_round), 3),
    }
    key = "keras_elmo/stateless vs simple_elmo"
    record["target"]["met"] = ratios[key]["ratio_of_medians"] >= TARGET
    default = key + "/default-call"
    record["target"]["met_against_the_default_call"] = (
        ratios[default]["ratio_of_medians"] >= TARGET
    )
    record["rounds"] = rounds
    provenance.write_json(args.out, record)
    print(json.dumps({k: record[k] for k in ("summary", "peak_rss_mb")}))
    print(json.dumps(record["agreement"], indent=1))


def main_portable(args):
    """`--portable`: see the module docstring."""
    import numpy as np

    sentences = real_text.read_sentences(args.text, args.lines)
    groups = [
        sentences[i : i + args.batch_size]
        for i in range(0, len(sentences), args.batch_size)
    ]
    options = os.path.join(args.model_dir, "options.json")
    weights = os.path.join(args.model_dir, "weights.hdf5")
    names = list(PORTABLE_WORKERS)
    record = {
        "provenance": provenance.provenance(
            written=[args.out],
            modules=[
                "benchmarks/simple_elmo_worker.py",
                "tools/simple_elmo_ref/run_simple_elmo.py",
                "keras_elmo/export/portable.py",
                "keras_elmo/export/portable_runtime.py",
            ],
        ),
        "what": (
            "tokens/s on real sentences of simple_elmo 0.9.2's kept session "
            "(get_elmo_vectors, layers='all'), keras_elmo's TensorFlow path "
            "(Embedder.embed, stateless) and keras_elmo's ONNX and LiteRT "
            "exports, float32 and int8 (dynamic range), read by "
            "portable_runtime.py without TensorFlow; the same weights "
            "(model_dir), batches in file order, alternating worker "
            "processes; ratio = median tokens/s over the base's median, "
            "range = min-max per-round ratio"
        ),
        "model_dir": os.path.relpath(args.model_dir, REPO),
        "text": os.path.relpath(args.text, REPO),
        "lines": args.lines,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "workload": real_text.describe(groups),
        "target": {"int8_vs_simple_elmo": PORTABLE_TARGET},
    }
    with tempfile.TemporaryDirectory() as tmp:
        files = export_portable_files(options, weights, tmp)
        record["files"] = {
            name: {k: v for k, v in f.items() if k != "path"}
            for name, f in files.items()
        }
        sentences_path = os.path.join(tmp, "sentences.json")
        with open(sentences_path, "w", encoding="utf-8") as f:
            json.dump(sentences, f)
        workers = start_workers(
            args, options, weights, sentences_path, tmp, files
        )
        record["load_s"] = {n: w.ready["load_s"] for n, w in workers.items()}
        for worker in workers.values():
            worker.ask("warm")
        rounds = []
        for round_ in range(args.rounds):
            passes = {}
            for name in names if round_ % 2 == 0 else names[::-1]:
                load = round(os.getloadavg()[0], 2)
                answer = workers[name].ask("round")
                passes[name] = {
                    "seconds": round(answer["seconds"], 3),
                    "tokens_per_s": round(
                        answer["tokens"] / answer["seconds"], 1
                    ),
                    "load_before": load,
                }
            rounds.append(passes)
            print(json.dumps({"round": round_ + 1, **passes}), flush=True)
        outputs = {}
        for name, worker in workers.items():
            path = os.path.join(tmp, name.replace("/", "_") + ".npy")
            worker.ask(f"outputs {path}")
            outputs[name] = np.load(path)
        record["peak_rss_mb"] = {
            n: round(w.quit()["peak_rss_mb"], 1) for n, w in workers.items()
        }
    tf_path = outputs["keras_elmo/stateless"]
    record["agreement_with_keras_elmo_stateless"] = {
        name: agreement(outputs[name], tf_path) for name in names[2:]
    }
    record["agreement_with_simple_elmo"] = {
        name: agreement(outputs[name], outputs["simple_elmo"])
        for name in names[1:]
    }
    medians, ratios = summarise(rounds, names)
    ratios.update(summarise(rounds, names[:2], bases=1)[1])
    record["summary"] = {"tokens_per_s_median": medians, "ratios": ratios}
    best = max(
        ratios[f"portable/{n} vs simple_elmo"]["ratio_of_medians"]
        for n in PORTABLE
        if n.endswith("int8")
    )
    record["target"]["best_int8_ratio_of_medians"] = best
    record["target"]["met"] = best >= PORTABLE_TARGET
    record["rounds"] = rounds
    provenance.write_json(args.out, record)
    print(json.dumps(record["summary"], indent=1))
    print(json.dumps(record["target"]))


if __name__ == "__main__":
    main()
