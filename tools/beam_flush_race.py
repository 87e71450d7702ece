"""Shows the Beam output-stream race that `SizeFlushedFnApiRunner` avoids.

    python tools/beam_flush_race.py [--elements 200000] [--period-ms 1]
        [--switch-interval-us 1]

Writes `--elements` 1 kB byte strings from this thread into Beam's
`TimeBasedBufferingClosableOutputStream` (the stream the local gRPC runner
gives its workers, with a 1000 ms period there) and counts what its flush
callback received; then does the same with the size-only stream
`SizeFlushedFnApiRunner` makes Beam use. A short period makes the race
(`keras_elmo/integrations/beam/local_runner.py`) show within seconds, and so
does a short `sys.setswitchinterval` (`--switch-interval-us`, 1 by default;
CPython's own is 5000): the interpreter then switches between the writing thread
and the flush thread often enough that the flush lands between `get()` and
`_clear()` many times a run, as it does now and then with the 1 s period on a
loaded machine. Exits 1 if the size-only stream lost anything; 0 otherwise
(printing what the timer-flushed one lost).

How many elements a timed run loses depends on the scheduler (sometimes
none). `forced_interleaving` shows the same loss without luck: Beam's own
timer thread flushes, its callback is held between `get()` and `_clear()`
until the writing thread has written one more element, and that element is
gone.
"""

import argparse
import logging
import sys
import threading

from apache_beam.coders import coders
from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.runners.worker import data_plane

logger = logging.getLogger("beam_flush_race")

ELEMENTS = 200_000
PERIOD_MS = 1
SWITCH_INTERVAL_US = 1.0


def decoded_count(coder, received):
    """How many elements `coder` decodes from the byte strings `received`
    (each flush's or the close's buffer)."""
    count = 0
    for data in received:
        stream_in = create_InputStream(data)
        while stream_in.size() > 0:
            coder.decode_from_stream(stream_in, True)
            count += 1
    return count


def delivered(stream_class, elements, **kwargs):
    """Elements the stream's callbacks received, of `elements` written."""
    coder = coders.BytesCoder().get_impl()
    received = []
    stream = stream_class(
        close_callback=received.append,
        flush_callback=received.append,
        **kwargs,
    )
    payload = b"x" * 1000
    for _ in range(elements):
        coder.encode_to_stream(payload, stream, True)
        stream.maybe_flush()
    stream.close()
    return decoded_count(coder, received)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--elements", type=int, default=ELEMENTS)
    parser.add_argument("--period-ms", type=int, default=PERIOD_MS)
    parser.add_argument(
        "--switch-interval-us", type=float, default=SWITCH_INTERVAL_US
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    timed, sized = race(args.elements, args.period_ms, args.switch_interval_us)
    logger.info("written:                        %d", args.elements)
    logger.info("received, timer flush (Beam's): %d", timed)
    logger.info("received, size-only flush:      %d", sized)
    return 0 if sized == args.elements else 1


def race(elements, period_ms, switch_interval_us=None):
    """`(received with Beam's timer flush, received with size-only)`, with
    `sys.setswitchinterval` at `switch_interval_us` meanwhile (None:
    CPython's as it is)."""
    saved = sys.getswitchinterval()
    if switch_interval_us is not None:
        sys.setswitchinterval(switch_interval_us * 1e-6)
    try:
        return _race(elements, period_ms)
    finally:
        sys.setswitchinterval(saved)


def _race(elements, period_ms):
    timed = delivered(
        data_plane.TimeBasedBufferingClosableOutputStream,
        elements,
        time_flush_threshold_ms=period_ms,
    )
    sized = delivered(
        data_plane.SizeBasedBufferingClosableOutputStream, elements
    )
    return timed, sized


def forced_interleaving(period_ms=1, timeout_s=30.0):
    """`(written, received)` of Beam's timer-flushed stream when one element
    is written while its timer thread is between `get()` and `_clear()`.

    The first element is written holding the stream's flush lock, so no
    flush sees half of it; the timer thread's flush of it is then held in
    its callback until the second element is written (without the lock, as
    Beam's workers write). `close` waits for the timer's flush to end. The
    answer is `(2, 1)` every run: the second element was cleared unsent.
    """
    coder = coders.BytesCoder().get_impl()
    received = []
    holding = threading.Event()
    written = threading.Event()

    def on_flush(data):
        received.append(data)
        if data and not holding.is_set():
            holding.set()
            written.wait(timeout_s)

    stream = data_plane.TimeBasedBufferingClosableOutputStream(
        close_callback=received.append,
        flush_callback=on_flush,
        time_flush_threshold_ms=period_ms,
    )
    with stream._flush_lock:
        coder.encode_to_stream(b"first", stream, True)
    if not holding.wait(timeout_s):
        stream.close()
        raise RuntimeError(
            f"the timer thread did not flush within {timeout_s} s"
        )
    coder.encode_to_stream(b"second", stream, True)
    written.set()
    stream.close()
    return 2, decoded_count(coder, received)


if __name__ == "__main__":
    raise SystemExit(main())
