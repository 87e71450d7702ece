"""TensorFlow's thread pools sized for one of several worker processes.

TensorFlow gives every process an intra-op and an inter-op pool of one
thread per core of the machine. A machine of `C` cores running `W`
worker processes side by side (Beam's local `multi_processing` workers,
Spark's Python workers, one task per core) then runs up to `2 W C`
compute threads on `C` cores: they preempt each other between the small
ops of an LSTM step, and each worker runs slower than its share of the
machine. Sizing each worker's pools to its share,

    threads = max(1, C // W),

keeps one compute thread per core. The pools can be sized only before
TensorFlow first runs an op in the process; a process that already ran
TensorFlow keeps its pools (logged, not an error).
"""

import logging
import os

from keras_elmo.utils import check_positive_int

logger = logging.getLogger(__name__)


def available_cores():
    """The cores this process may run on (`os.sched_getaffinity`)."""
    return len(os.sched_getaffinity(0))


def threads_per_worker(workers, cores=None):
    """`max(1, cores // workers)`: each of `workers` processes' share.

    Args:
        workers: int >= 1. Worker processes sharing the machine.
        cores: int or None. The machine's cores (default:
            `available_cores()`).
    """
    check_positive_int("workers", workers)
    if cores is None:
        cores = available_cores()
    check_positive_int("cores", cores)
    return max(1, cores // workers)


def size_tensorflow_threads(threads):
    """Sets this process's intra-op and inter-op pools to `threads`.

    Returns True when set, False when TensorFlow had already started its
    pools in this process (they are kept).
    """
    check_positive_int("threads", threads)
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # TensorFlow already initialised in this process
        logger.info(
            "TensorFlow thread pools already started; kept (asked for %d)",
            threads,
        )
        return False
    logger.info("TensorFlow thread pools: %d threads each", threads)
    return True
