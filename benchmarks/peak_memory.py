"""A worker process's own peak resident memory (standard library only, so
that workers which must not import TensorFlow, and the side venvs' workers,
can use it)."""

import resource


def peak_rss_mb():
    """This process's peak resident memory, MB: `VmHWM`, the high-water
    mark of its own address space. (`ru_maxrss` is not it: Linux carries
    the parent's peak across fork and exec into it.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
