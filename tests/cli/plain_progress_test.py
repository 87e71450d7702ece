"""Progress in a redirected log: whole lines, no escape codes, an ETA."""

import io

from keras_elmo.cli.main import main
from keras_elmo.utils.progress import PlainProgress
from keras_elmo.utils.progress import progress_bar


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_plain_lines_with_elapsed_time_and_eta():
    stream, clock = io.StringIO(), FakeClock()
    bar = PlainProgress(400, "line", stream, interval=10, clock=clock)
    clock.now += 5
    bar.update(100)  # the first update always prints
    clock.now += 4
    bar.update(150)  # within the interval: nothing
    clock.now += 6
    bar.update(200)
    clock.now += 1
    bar.update(400)  # the last one always prints
    assert stream.getvalue() == (
        "100/400 lines (25%), 5s, ETA 15s\n"
        "200/400 lines (50%), 15s, ETA 15s\n"
        "400/400 lines (100%), 16s\n"
    )


def test_unknown_total_and_long_durations():
    stream, clock = io.StringIO(), FakeClock()
    bar = PlainProgress(None, "step", stream, clock=clock)
    clock.now += 3725
    bar.update(57)
    assert stream.getvalue() == "57 steps, 1:02:05\n"


def test_a_stream_that_is_not_a_terminal_gets_plain_progress():
    assert isinstance(progress_bar(10, stream=io.StringIO()), PlainProgress)


def test_embed_redirected_has_no_escape_codes(tmp_path, capsys):
    corpus = tmp_path / "in.txt"
    corpus.write_text("a b c\nd e\n")
    out = str(tmp_path / "out.hdf5")
    assert main(["embed", str(corpus), out, "--random-weights", "tiny"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "\r" not in err and "\b" not in err
    assert "2/2 lines (100%)" in err
