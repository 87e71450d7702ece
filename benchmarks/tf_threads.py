"""Pin TensorFlow's thread pools for a benchmark run."""

import sys


def set_threads(tf, threads):
    """Intra- and inter-op pools of `threads` threads each.

    TensorFlow fixes its pools when it first runs an op, so a script's
    `main()` called again in a process that already ran TensorFlow (the
    test suite) keeps the pools it has; that is said on stderr, and a
    standalone run always gets `threads`.
    """
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError as error:
        print(f"threads left as they are: {error}", file=sys.stderr)
