"""One model per Spark Python worker process, loaded on first use.

Spark reuses its Python worker processes across tasks
(`spark.python.worker.reuse`, on by default), so a module-level cache
keyed by the model spec loads each model once per process, not once per
task or batch. An executor with `C` cores runs up to `C` Python workers
at a time, each with its own model (memory: `C` models per executor).

Before the first load, TensorFlow's thread pools are sized to the task's
CPUs (`TaskContext.cpus()`, i.e. `spark.task.cpus`, 1 by default): Spark
already runs one task per core, and TensorFlow's default of one thread
per machine core in every worker would oversubscribe the machine.
"""

import json
import logging

from keras_elmo.utils.thread_pools import size_tensorflow_threads

logger = logging.getLogger(__name__)

_MODELS = {}  # (loader, spec JSON) -> embedder, for this process


def _spec_key(loader, spec):
    name = f"{loader.__module__}.{loader.__qualname__}"
    return name, json.dumps(spec, sort_keys=True, default=str)


def _size_thread_pools():
    """Sets TensorFlow's pools to the task's CPUs, when TensorFlow has not
    started them yet (a process that already ran TensorFlow keeps its)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return
    size_tensorflow_threads(max(1, int(context.cpus())))


def cached_embedder(loader, spec):
    """The embedder `loader(spec)` gives, loaded once per process.

    Args:
        loader: a module-level callable `spec -> (embedder, description)`
            (pickled by reference: importable on the executors).
        spec: a JSON-serialisable value naming the model.
    """
    key = _spec_key(loader, spec)
    if key not in _MODELS:
        _size_thread_pools()
        embedder, description = loader(spec)
        logger.info("Loaded %s in this Spark worker", description)
        _MODELS[key] = embedder
    return _MODELS[key]


def spec_of(model):
    """The model spec (`keras_elmo.embedding.model_spec`) of `model`: a spec
    dict as given, else any source `resolve_model` accepts (a preset
    name, a folder, a `.zip`, a URL, `hf://`, a SavedModel, a `.keras`
    file) as `{"model": model}`."""
    if isinstance(model, dict):
        return dict(model)
    return {"model": model}
