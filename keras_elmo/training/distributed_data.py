"""The training batches of one epoch, split over a strategy's replicas.

The `tf.distribute` strategy chosen by name (`make_strategy`) and whether
this worker is the chief (`is_chief`).
"""

import json
import logging
import os

import tensorflow as tf

from keras_elmo.data.lm_dataset import make_lm_dataset

logger = logging.getLogger(__name__)


def epoch_batches(config, vocabulary, epoch, replica_index=0, num_replicas=1):
    """The training batches of 0-based `epoch`, one replica's slice.

    `make_lm_dataset` over `config.train` in global batches of
    `config.batch_size` sentences, shuffled with the seed
    `config.seed + epoch` (the same batches on every run of that epoch,
    so a resume can skip to where it stopped); both trainers read this.
    """
    return make_lm_dataset(
        config.train,
        vocabulary,
        global_batch_size=config.batch_size,
        max_tokens=config.max_tokens,
        shuffle=True,
        shuffle_buffer=config.shuffle_buffer,
        seed=config.seed + epoch,
        bucket_boundaries=config.bucket_boundaries,
        replica_index=replica_index,
        num_replicas=num_replicas,
    )


def distributed_lm_dataset(strategy, config, vocabulary, epoch, skip_batches):
    """The batches of 0-based `epoch`, from batch `skip_batches` on.

    Every replica reads its own slice of each global batch of
    `config.batch_size` sentences (`make_lm_dataset(replica_index=...,
    num_replicas=...)`), shuffled with the seed `config.seed + epoch`, so
    a resumed epoch skips to exactly the batches it had not trained on.
    An input pipeline serving several local replicas hands consecutive
    elements to consecutive replicas.

    Args:
        strategy: a `tf.distribute.Strategy`.
        config: `TrainingConfig`.
        vocabulary: the `Vocabulary` of the run.
        epoch: int, 0-based.
        skip_batches: int, batches of this epoch already trained on.

    Returns:
        A distributed dataset of `(features, targets)`.
    """
    replicas = strategy.num_replicas_in_sync

    def dataset_fn(context):
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local
        slices = [
            epoch_batches(config, vocabulary, epoch, first + r, replicas).skip(
                skip_batches
            )
            for r in range(local)
        ]
        if local == 1:
            return slices[0]
        zipped = tf.data.Dataset.zip(tuple(slices))
        return zipped.flat_map(
            lambda *parts: _concatenate(
                [tf.data.Dataset.from_tensors(p) for p in parts]
            )
        )

    options = tf.distribute.InputOptions(experimental_fetch_to_device=True)
    return strategy.distribute_datasets_from_function(dataset_fn, options)


def _concatenate(datasets):
    out = datasets[0]
    for dataset in datasets[1:]:
        out = out.concatenate(dataset)
    return out


STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker")


def make_strategy(name="auto"):
    """Returns the `tf.distribute.Strategy` called `name`.

    - `one_device`: the first GPU, else the CPU.
    - `mirrored`: `MirroredStrategy` over the local GPUs (or, with no GPU,
      the logical CPU devices configured before, for tests).
    - `multi_worker`: `MultiWorkerMirroredStrategy`; reads `TF_CONFIG`.
    - `auto`: `multi_worker` when `TF_CONFIG` names more than one task,
      `mirrored` with several GPUs, else `one_device`.
    """
    if name not in STRATEGIES:
        raise ValueError(
            "Received an invalid value for argument `strategy`, expected "
            f"one of {STRATEGIES}, got {name!r}."
        )
    if name == "auto":
        name = _auto_name()
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError(
                "`strategy='multi_worker'` needs the TF_CONFIG environment "
                "variable (cluster and task), which is not set."
            )
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    elif name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = [d.name for d in gpus] or [
            d.name for d in tf.config.list_logical_devices("CPU")
        ]
        strategy = tf.distribute.MirroredStrategy(devices)
    else:
        gpus = tf.config.list_logical_devices("GPU")
        strategy = tf.distribute.OneDeviceStrategy(
            gpus[0].name if gpus else "/cpu:0"
        )
    logger.info(
        "Strategy %s with %d replicas",
        type(strategy).__name__,
        strategy.num_replicas_in_sync,
    )
    return strategy


def _auto_name():
    config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    tasks = sum(len(v) for v in config.get("cluster", {}).values())
    if tasks > 1:
        return "multi_worker"
    if len(tf.config.list_logical_devices("GPU")) > 1:
        return "mirrored"
    return "one_device"


def is_chief(strategy):
    """True on the worker that writes checkpoints, logs and outputs."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return task_type in (None, "chief") or (
        task_type == "worker"
        and task_id == 0
        and "chief" not in resolver.cluster_spec().as_dict()
    )
