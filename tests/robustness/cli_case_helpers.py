"""What the CLI case tables share: in-process runs of `keras-elmo` that
expect exit code 2 (`failing`, raising `CommandFailed` with stderr),
the fixture model's files and the bad input files the rows feed.
"""


class CommandFailed(Exception):
    """Raised by `failing` with the command's stderr as its message."""


def write(fx, name, data):
    path = fx("tmp_path") / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def failing(*argv_fn):
    """A run that expects exit code 2; raises CommandFailed(stderr)."""

    def run(fx):
        argv = [a(fx) if callable(a) else a for a in argv_fn]
        code, out, err = fx("cli")(*argv)
        assert code == 2, (code, out, err)
        raise CommandFailed(err)

    return run


def failing_train(*flags, out=None):
    """`train` on a one-line corpus with the fixture vocabulary into `out`
    (default: a fresh `run` directory), `flags` added; expects exit code
    2."""
    return failing(
        "train",
        "--train",
        lambda fx: write(fx, "c.txt", b"a b\n"),
        "--vocab",
        lambda fx: model_files(fx)["vocabulary"],
        "--architecture",
        "tiny",
        "--out",
        out or out_path("run"),
        *flags,
    )


def failing_evaluate(*flags):
    """`evaluate` of a whitespace-only file with the fixture model,
    `flags` added; expects exit code 2."""
    return failing(
        "evaluate",
        "--data",
        whitespace_file,
        "--model",
        lambda fx: fx("model_dir"),
        *flags,
    )


def refuses_overwrite(*argv_fn, target):
    """The command refuses an existing `target` and leaves it unchanged."""

    def run(fx):
        path = target(fx)
        with open(path, "wb") as f:
            f.write(b"old contents")
        argv = [a(fx) if callable(a) else a for a in argv_fn]
        code, out, err = fx("cli")(*argv)
        with open(path, "rb") as f:
            assert f.read() == b"old contents"
        assert code == 2, (code, out, err)
        raise CommandFailed(err)

    return run


def model_files(fx):
    from keras_elmo.weights.hdf5 import model_paths

    return model_paths(fx("model_dir"))


def options(fx):
    return model_files(fx)["options"]


def weights(fx):
    return model_files(fx)["weights"]


def corrupt(fx):
    return write(fx, "corrupt.bin", bytes(range(256)) * 4)


def not_utf8(fx):
    return write(fx, "latin1.json", b'{"lstm": "caf\xe9"}')


def empty_file(fx):
    return write(fx, "empty.txt", b"")


def whitespace_file(fx):
    return write(fx, "blank.txt", b"  \n\t\n\r\n")


def lambda_keras(fx):
    import keras

    path = str(fx("tmp_path") / "lambda.keras")
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Lambda(lambda x: x * 2)]
    )
    model.save(path)
    return path


def out_path(name):
    return lambda fx: str(fx("tmp_path") / name)


def arg(text):
    return lambda fx: text


MISSING = "does-not-exist.txt"
