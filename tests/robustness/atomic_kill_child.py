"""Child process of `atomic_kill_test.py`: writers caught mid-write.

    python atomic_kill_child.py block WORKDIR
    python atomic_kill_child.py loop WORKDIR

`block`: every writer is started on its own thread with a hook that
stops it forever in the middle of its write (after some HDF5 datasets,
after half of a text file, inside the `.keras` zip, after the SavedModel
is written but before it is renamed); once all are stopped the child
prints BLOCKED and waits for its SIGKILL.

`loop`: first writes each new file to WORKDIR/new/ (the reference), prints
READY, then rewrites every destination in WORKDIR in a loop until killed.

The new files come from a BiLM with another seed than the old ones, so
old and new differ.
"""

import argparse
import contextlib
import os
import sys
import threading
import zipfile

import h5py

NAMES = {
    "options": "options.json",
    "weights": "weights.hdf5",
    "softmax": "softmax.hdf5",
    "vocabulary": "vocab.txt",
    "keras": "bilm.keras",
    "export": "savedmodel",
    "embed": "vectors.hdf5",
    "embed_input": "lines.txt",
}
NEW_SEED = 99
NEW_VOCAB = ["<S>", "</S>", "<UNK>", "a", "b", "c", "the", "cat"]

_local = threading.local()


def _hook(kind):
    """Blocks the calling writer thread at its `at`-th call of `kind`."""
    plan = getattr(_local, "plan", None)
    if not plan or kind != plan["kind"]:
        return
    plan["calls"] += 1
    if plan["calls"] == plan["at"]:
        plan["stopped"].set()
        threading.Event().wait()  # forever: the parent kills us here


def _install_hooks():
    real_create = h5py.Group.create_dataset

    def create_dataset(self, *args, **kwargs):
        _hook("hdf5")
        return real_create(self, *args, **kwargs)

    h5py.Group.create_dataset = create_dataset

    real_open = zipfile.ZipFile.open

    def zip_open(self, name, mode="r", *args, **kwargs):
        if mode == "w":
            _hook("zip")
        return real_open(self, name, mode, *args, **kwargs)

    zipfile.ZipFile.open = zip_open

    import tensorflow as tf

    real_save = tf.saved_model.save

    def saved_model_save(*args, **kwargs):
        result = real_save(*args, **kwargs)
        _hook("savedmodel")  # written to the temp dir, not yet renamed
        return result

    tf.saved_model.save = saved_model_save

    from keras_elmo.config import options as options_json
    from keras_elmo.data import vocabulary
    from keras_elmo.utils import atomic

    def half_then_hook(real):
        @contextlib.contextmanager
        def atomic_write(path, *args, **kwargs):
            with real(path, *args, **kwargs) as f:
                yield _HalfWriter(f)

        return atomic_write

    vocabulary.atomic_write = half_then_hook(vocabulary.atomic_write)
    options_json.atomic_write = half_then_hook(options_json.atomic_write)
    atomic.atomic_write = half_then_hook(atomic.atomic_write)


class _HalfWriter:
    """A file whose first write stops halfway (flushed) at the hook."""

    def __init__(self, f):
        self._f = f

    def write(self, text):
        if getattr(_local, "plan", None) and _local.plan["kind"] == "text":
            half = max(1, len(text) // 2)
            self._f.write(text[:half])
            self._f.flush()
            _hook("text")
            text = text[half:]
        return self._f.write(text)


def _models():
    import keras

    import keras_elmo
    from keras_elmo.data.vocabulary import Vocabulary

    keras.utils.set_random_seed(NEW_SEED)
    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
    lm = keras_elmo.BiLMLanguageModel(bilm, len(NEW_VOCAB), dropout=0.0)
    bilm(keras_elmo.batch_to_ids([["new"]]))
    return bilm, lm, Vocabulary(NEW_VOCAB + ["new"])


def writers(workdir, bilm, lm, vocab):
    """`{name: (hook kind, stop at call, write())}` for every writer."""
    from keras_elmo.embedding.embedder import BiLMEmbedder
    from keras_elmo.embedding.hdf5_output import embed_file
    from keras_elmo.export.saved_model import export_saved_model
    from keras_elmo.utils.atomic import save_keras_atomically
    from keras_elmo.weights.hdf5 import save_bilm_hdf5
    from keras_elmo.weights.hdf5 import save_softmax_hdf5

    def path(name):
        return os.path.join(workdir, NAMES[name])

    return {
        "weights": ("hdf5", 5, lambda: save_bilm_hdf5(bilm, path("weights"))),
        "options": (
            "text",
            1,
            lambda: bilm.config.to_options_json(path("options")),
        ),
        "softmax": (
            "hdf5",
            2,
            lambda: save_softmax_hdf5(lm.softmax, path("softmax")),
        ),
        "vocabulary": ("text", 1, lambda: vocab.save(path("vocabulary"))),
        "keras": ("zip", 2, lambda: save_keras_atomically(bilm, path("keras"))),
        "export": (
            "savedmodel",
            1,
            lambda: export_saved_model(bilm, path("export"), overwrite=True),
        ),
        "embed": (
            "hdf5",
            2,
            lambda: embed_file(
                BiLMEmbedder(bilm),
                path("embed_input"),
                path("embed"),
                layers="top",
                batch_size=2,
                force=True,
            ),
        ),
    }


def block(workdir):
    _install_hooks()
    table = writers(workdir, *_models())
    for name, (kind, at, write) in table.items():
        plan = {"kind": kind, "at": at, "calls": 0}
        plan["stopped"] = threading.Event()

        def target(plan=plan, write=write):
            _local.plan = plan
            write()
            print("FINISHED", flush=True)  # the hook never fired

        threading.Thread(target=target, daemon=True).start()
        if not plan["stopped"].wait(300):
            print(f"NOT STOPPED {name}", flush=True)
            return 1
        print(f"STOPPED {name}", flush=True)
    print("BLOCKED", flush=True)
    threading.Event().wait()


def loop(workdir):
    bilm, lm, vocab = _models()
    reference = os.path.join(workdir, "new")
    os.makedirs(reference, exist_ok=True)
    cheap = ("weights", "options", "softmax", "vocabulary")
    for name, (_, _, write) in writers(reference, bilm, lm, vocab).items():
        if name in cheap:
            write()
    table = writers(workdir, bilm, lm, vocab)
    print("READY", flush=True)
    while True:
        for name in cheap:
            table[name][2]()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["block", "loop"])
    parser.add_argument("workdir")
    args = parser.parse_args()
    return block(args.workdir) if args.mode == "block" else loop(args.workdir)


if __name__ == "__main__":
    sys.exit(main())
