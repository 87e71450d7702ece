"""The `original` biLM under each Keras backend, side by side, alternately.

    python benchmarks/backend_throughput.py \\
        [--backends tensorflow,jax,torch] [--lines 256] [--rounds 3]
        [--text ../shared/data/en_pd_lm/test.txt.gz] [--batch-size 64]
        [--threads 2] [--python-torch PYTHON]
        [--out benchmarks/results/backend_throughput.json]

One worker process per backend (`benchmarks/backend_worker.py` with
`KERAS_BACKEND` set; `--python-BACKEND` picks another venv's python)
loads the SAME `original` weights (seeded random weights in the
published format, `shared/ref/make_weights.py`, made into
`/tmp/elmo_ref/w` when missing) with `BiLM.from_allennlp` and runs the
same real sentences (`benchmarks/real_text.py`: the file's first
`--lines` lines of >= 3 tokens cut at 64, file order, batches of
`--batch-size`, each padded to its longest line) through
`bilm.predict_on_batch`, pinned to `--threads` cores.

Each backend runs the path the layers choose for it
(docs/BACKENDS.md): TensorFlow the packed loop over real tokens and the
char-CNN over each distinct token once; JAX and PyTorch the padded
`keras.ops` scan over every position and every token. So the figure is
what a user of each backend gets, not a like-for-like kernel race.

After one untimed pass each (JAX compiles every batch shape there),
every round times one pass of each worker, the workers taking turns
(reversed every other round), with the 1-minute load average before
each pass. tokens/s = real tokens / seconds; per backend the median over
rounds, and the ratio of medians to TensorFlow's with the per-round
range. Then the outputs: every real token's three ELMo layers under each
backend against TensorFlow's (max |difference| / max |TensorFlow|), and
each worker's peak RSS. A backend whose worker cannot start (not
installed) is recorded as skipped, with the reason. Every worker
reports its device, so the same command on a machine with an
accelerator says where it ran.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import provenance  # noqa: E402
import real_text  # noqa: E402
from simple_elmo_side_by_side import Worker  # noqa: E402
from simple_elmo_side_by_side import original_weights  # noqa: E402

BACKENDS = ("tensorflow", "jax", "torch")


def start_workers(args, options, weights, sentences_path):
    """`({backend: Worker}, {backend: reason})` for the started and the
    skipped backends."""
    workers, skipped = {}, {}
    for backend in args.backends:
        python = getattr(args, f"python_{backend}") or sys.executable
        env = dict(
            os.environ,
            KERAS_BACKEND=backend,
            PYTHONPATH=REPO,
            TF_CPP_MIN_LOG_LEVEL="2",
        )
        command = [
            python,
            os.path.join(HERE, "backend_worker.py"),
            "--options",
            options,
            "--weights",
            weights,
            "--sentences",
            sentences_path,
            "--batch-size",
            str(args.batch_size),
            "--threads",
            str(args.threads),
        ]
        try:
            workers[backend] = Worker(backend, command, env=env)
        except RuntimeError as error:
            skipped[backend] = str(error)
    return workers, skipped


def agreement(ours, reference):
    """Per ELMo layer and overall: max |ours - ref| over max |ref|."""
    import numpy as np

    out = {}
    for layer in range(reference.shape[1]):
        diff = float(np.abs(ours[:, layer] - reference[:, layer]).max())
        scale = float(np.abs(reference[:, layer]).max())
        out[f"layer{layer}"] = diff / scale
    out["all"] = float(np.abs(ours - reference).max()) / float(
        np.abs(reference).max()
    )
    return out


def summarise(rounds, names):
    """Median tokens/s per backend; ratios of medians to TensorFlow's."""
    speeds = {n: [r[n]["tokens_per_s"] for r in rounds] for n in names}
    medians = {n: round(statistics.median(v), 1) for n, v in speeds.items()}
    ratios = {}
    if "tensorflow" in names:
        for name in names:
            if name == "tensorflow":
                continue
            per_round = [
                r[name]["tokens_per_s"] / r["tensorflow"]["tokens_per_s"]
                for r in rounds
            ]
            ratios[f"{name} vs tensorflow"] = {
                "ratio_of_medians": round(
                    medians[name] / medians["tensorflow"], 3
                ),
                "per_round_min": round(min(per_round), 3),
                "per_round_max": round(max(per_round), 3),
            }
    return medians, ratios


def parse_backends(value):
    names = tuple(b for b in value.split(",") if b)
    unknown = [b for b in names if b not in BACKENDS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated subset of {','.join(BACKENDS)}, "
            f"received {value!r}"
        )
    return names


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", type=parse_backends, default=BACKENDS)
    parser.add_argument(
        "--text", default=os.path.join(real_text.EN_PD_LM, "test.txt.gz")
    )
    parser.add_argument("--lines", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    for backend in BACKENDS:
        parser.add_argument(f"--python-{backend}", default=None)
    parser.add_argument("--weights-dir", default=real_text.WEIGHTS_DIR)
    parser.add_argument(
        "--out",
        default=os.path.join(HERE, "results", "backend_throughput.json"),
    )
    args = parser.parse_args(argv)
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
            "tokens/s, peak RSS and output agreement of the `original` "
            "biLM (BiLM.from_allennlp, predict_on_batch) under each Keras "
            "backend on the same random weights and real sentences, file "
            "order, alternating worker processes; ratio = median tokens/s "
            "over TensorFlow's median, range = min-max per-round ratio"
        ),
        "text": os.path.relpath(args.text, REPO),
        "lines": args.lines,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "workload": real_text.describe(groups),
    }
    with tempfile.TemporaryDirectory() as tmp:
        sentences_path = os.path.join(tmp, "sentences.json")
        with open(sentences_path, "w", encoding="utf-8") as f:
            json.dump(sentences, f)
        workers, skipped = start_workers(args, options, weights, sentences_path)
        if not workers:
            raise RuntimeError(f"No backend could start: {skipped}")
        names = [b for b in args.backends if b in workers]
        record["skipped"] = skipped
        record["device"] = {n: workers[n].ready["device"] for n in names}
        record["load_s"] = {n: workers[n].ready["load_s"] for n in names}
        record["warm_s"] = {
            n: round(workers[n].ask("warm")["seconds"], 3) for n in names
        }
        rounds = []
        for round_ in range(args.rounds):
            passes = {}
            order = names if round_ % 2 == 0 else names[::-1]
            for name in order:
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
        for name in names:
            path = os.path.join(tmp, f"{name}.npy")
            workers[name].ask(f"outputs {path}")
            outputs[name] = np.load(path)
        record["peak_rss_mb"] = {
            n: round(workers[n].quit()["peak_rss_mb"], 1) for n in names
        }
    if "tensorflow" in outputs:
        record["agreement_vs_tensorflow"] = {
            n: agreement(outputs[n], outputs["tensorflow"])
            for n in names
            if n != "tensorflow"
        }
    medians, ratios = summarise(rounds, names)
    record["summary"] = {"tokens_per_s_median": medians, "ratios": ratios}
    record["rounds"] = rounds
    provenance.write_json(args.out, record)
    print(json.dumps(record["summary"], indent=1))
    print(json.dumps(record.get("agreement_vs_tensorflow"), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
