"""Shows the Beam output-stream race that `SizeFlushedFnApiRunner` avoids.

    python tools/beam_flush_race.py [--elements 200000] [--period-ms 1]

Writes `--elements` 1 kB byte strings from this thread into Beam's
`TimeBasedBufferingClosableOutputStream` (the stream the local gRPC runner
gives its workers, with a 1000 ms period there) and counts what its flush
callback received; then does the same with the size-only stream
`SizeFlushedFnApiRunner` makes Beam use. A short period makes the race
(`keras_elmo/beam/local_runner.py`) show within seconds; exits 1 if the
size-only stream lost anything.
"""

import argparse
import logging

from apache_beam.coders import coders
from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.runners.worker import data_plane

logger = logging.getLogger("beam_flush_race")


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
    count = 0
    for data in received:
        stream_in = create_InputStream(data)
        while stream_in.size() > 0:
            coder.decode_from_stream(stream_in, True)
            count += 1
    return count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--elements", type=int, default=200_000)
    parser.add_argument("--period-ms", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    timed = delivered(
        data_plane.TimeBasedBufferingClosableOutputStream,
        args.elements,
        time_flush_threshold_ms=args.period_ms,
    )
    sized = delivered(
        data_plane.SizeBasedBufferingClosableOutputStream, args.elements
    )
    logger.info("written:                        %d", args.elements)
    logger.info("received, timer flush (Beam's): %d", timed)
    logger.info("received, size-only flush:      %d", sized)
    return 0 if sized == args.elements else 1


if __name__ == "__main__":
    raise SystemExit(main())
