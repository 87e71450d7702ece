"""A progress display on stderr: Keras' bar on a terminal, plain lines
elsewhere.

`keras.utils.Progbar` redraws its line with `\\b`/`\\r` and colours it
with ANSI escapes whenever Python runs on a POSIX system, terminal or
not, so a redirected log (`2> run.log`, a batch system) fills with
escape codes. `progress_bar` gives Keras' bar only when the stream is a
terminal, else `PlainProgress`: whole lines, no escapes, with the
elapsed time and an ETA when the total is known.
"""

import contextlib
import sys
import time


def progress_bar(total, unit_name="step", stream=None):
    """An object with `update(current, values=None)`: Keras' `Progbar`
    when `stream` (default stderr) is a terminal, else a `PlainProgress`.
    `values`: `(name, number)` pairs shown with the count, each the
    latest value (a loss, a rate), not an average."""
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return _KerasBar(total, unit_name, stream)
    return PlainProgress(total, unit_name, stream)


class _KerasBar:
    """`keras.utils.Progbar` drawn on `stream` (it writes to stdout)."""

    def __init__(self, total, unit_name, stream):
        self.stream = stream
        self.total = total
        self.unit_name = unit_name
        self.bar = None

    def update(self, current, values=None):
        import keras

        with contextlib.redirect_stdout(self.stream):
            if self.bar is None:
                # Each value is shown as it is (stateful), not averaged.
                self.bar = keras.utils.Progbar(
                    self.total,
                    unit_name=self.unit_name,
                    stateful_metrics=[name for name, _ in values or ()],
                )
            self.bar.update(current, values)


class PlainProgress:
    """Progress as whole lines (`1200/5000 lines (24%), 12s, ETA 38s`):
    one line at most every `interval` seconds, and the last one.

    Args:
        total: int or None. The count at the end, if known.
        unit_name: str. What is counted (`"line"`).
        stream: a text stream (default stderr).
        interval: float. Seconds between lines at least.
        clock: callable giving seconds (tests pass a fake one).
    """

    def __init__(
        self, total, unit_name="step", stream=None, interval=10.0, clock=None
    ):
        self.total = total
        self.unit_name = unit_name
        self.stream = stream or sys.stderr
        self.interval = interval
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.last = None

    def update(self, current, values=None):
        now = self.clock()
        done = self.total is not None and current >= self.total
        if not done and self.last is not None:
            if now - self.last < self.interval:
                return
        self.last = now
        line = self.line(current, now - self.start)
        for name, value in values or ():
            line += f" - {name}: {value:.4g}"
        self.stream.write(line + "\n")
        self.stream.flush()

    def line(self, current, elapsed):
        """`current/total units (p%), elapsed, ETA` (ETA when the total is
        known and not reached); `update` adds ` - name: value` for each
        of its `values` (4 significant digits)."""
        units = f"{self.unit_name}s"
        if not self.total:
            return f"{current} {units}, {_duration(elapsed)}"
        text = (
            f"{current}/{self.total} {units} "
            f"({100 * current // self.total}%), {_duration(elapsed)}"
        )
        if 0 < current < self.total:
            eta = elapsed * (self.total - current) / current
            text += f", ETA {_duration(eta)}"
        return text


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds >= 3600:
        return (
            f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
        )
    if seconds >= 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"
