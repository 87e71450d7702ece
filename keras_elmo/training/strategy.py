"""Choosing a `tf.distribute` strategy from an explicit name."""

import json
import logging
import os

import tensorflow as tf

logger = logging.getLogger(__name__)

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
