"""The worker of `benchmarks/backend_throughput.py`: one Keras backend.

    KERAS_BACKEND=jax python benchmarks/backend_worker.py \\
        --options O.json --weights W.hdf5 --sentences S.json \\
        [--batch-size 64] [--threads 2]

Speaks the protocol of `benchmarks/simple_elmo_worker.py` (one JSON line
per command on stdout): `{"ready": ...}` once the biLM is loaded
(`BiLM.from_allennlp`, the backend's own layers path), then for each
stdin line

- `warm`: one untimed pass over every batch (JAX compiles each batch
  shape here, TensorFlow traces its function);
- `round`: `bilm.predict_on_batch(char_ids)` on each batch in file
  order, and answers the seconds;
- `outputs PATH`: writes the real-token vectors `[N, 3, 2P]` float32
  (ELMo's three layers, sentences concatenated in order) to PATH (.npy);
- `quit`: answers the peak RSS and exits.

Every backend gets the same `[B, T, 50]` int32 ids (`batch_to_ids`,
NumPy, each batch padded to its longest sentence) and the process is
pinned to `--threads` cores (`sched_setaffinity`), with TensorFlow's and
PyTorch's thread pools set to the same number; JAX sizes its own pool
from the cores it may use. `ready` reports the backend's device.
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peak_memory import peak_rss_mb  # noqa: E402


def _reply(payload):
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def _device(backend):
    """The device the backend computes on, in words."""
    if backend == "jax":
        import jax

        return str(jax.devices()[0])
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
        return f"cpu ({torch.get_num_threads()} threads)"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return gpus[0].name if gpus else "cpu"


def _set_threads(backend, threads):
    cores = sorted(os.sched_getaffinity(0))[:threads]
    os.sched_setaffinity(0, cores)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--options", required=True)
    parser.add_argument("--weights", required=True)
    parser.add_argument("--sentences", required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    _set_threads(backend, args.threads)

    import keras
    import numpy as np

    import keras_elmo
    from keras_elmo.models.bilm_outputs import elmo_layers

    with open(args.sentences, encoding="utf-8") as f:
        sentences = json.load(f)
    tokens = sum(len(s) for s in sentences)
    batches = [
        keras_elmo.batch_to_ids(sentences[i : i + args.batch_size])
        for i in range(0, len(sentences), args.batch_size)
    ]
    start = time.perf_counter()
    bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
    _reply(
        {
            "ready": True,
            "backend": keras.config.backend(),
            "device": _device(backend),
            "load_s": time.perf_counter() - start,
        }
    )

    def run():
        return [bilm.predict_on_batch(ids) for ids in batches]

    for line in sys.stdin:
        command = line.split()
        try:
            if command[0] == "warm":
                start = time.perf_counter()
                run()
                _reply({"seconds": time.perf_counter() - start})
            elif command[0] == "round":
                start = time.perf_counter()
                run()
                seconds = time.perf_counter() - start
                _reply({"seconds": seconds, "tokens": tokens})
            elif command[0] == "outputs":
                vectors = []
                for outputs in run():
                    layers = np.stack(
                        [np.asarray(x) for x in elmo_layers(outputs)], axis=2
                    )
                    mask = np.asarray(outputs["mask"]).astype(bool)
                    vectors.append(layers[mask])
                np.save(command[1], np.concatenate(vectors).astype("float32"))
                _reply({"written": command[1]})
            elif command[0] == "quit":
                _reply({"peak_rss_mb": peak_rss_mb()})
                return 0
            else:
                _reply({"error": f"unknown command {command[0]!r}"})
        except Exception as error:  # answered, so the driver can report it
            _reply({"error": f"{type(error).__name__}: {error}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
