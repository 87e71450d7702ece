"""What the fault case tables share: the corpora users get wrong, and a
failing command run that must keep an earlier output byte-identical
(`failing_keeps`).
"""

from tests.robustness.case_table import error
from tests.robustness.cli_case_helpers import CommandFailed
from tests.robustness.cli_case_helpers import write

OLD = b"earlier output, must survive"
TEXT = "the cat a b\nb a the cat\na cat\n"
LATIN1 = "the café a\nnaïve b a\nà la cat\n".encode("cp1252")
RANDOM = bytes((i * 7919 + 13) % 256 for i in range(3000))
FOREIGN = "der Hund bellt\ndie Katze schläft a\n".encode()


def cli_error(surface, input, names, run):
    """An error row of a command: exit 2, stderr naming `names`, and the
    earlier output byte-identical."""
    return error(surface, input, CommandFailed, names, run, why=KEPT)


KEPT = "exit 2; the earlier output byte-identical"


def corpus(name, data):
    return lambda fx: write(fx, name, data)


def kept(fx, name):
    """A file holding `OLD`: the earlier output a failing run must keep."""
    path = fx("tmp_path") / "earlier" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(OLD)
    return str(path)


def failing_keeps(command, *argv_fn, keep):
    """Runs `keras-elmo COMMAND ARGV` (a callable arg is called with `fx`;
    `keep(fx)` gives the earlier output), expects exit code 2 and the
    earlier output byte-identical; raises CommandFailed(stderr)."""

    def run(fx):
        target = keep(fx)
        argv = [a(fx) if callable(a) else a for a in argv_fn]
        code, out, err = fx("cli")(command, *argv)
        with open(target, "rb") as f:
            assert f.read() == OLD, "an earlier output was changed"
        assert code == 2, (code, out, err)
        raise CommandFailed(err)

    return run
