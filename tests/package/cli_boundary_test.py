"""The command line stays at the edge: no library module imports argparse,
names one of `keras-elmo`'s flags in a message, or imports the CLI."""

import ast
import os
import re

import keras_elmo
from keras_elmo.cli.main import build_parser

PACKAGE_DIR = os.path.dirname(os.path.abspath(keras_elmo.__file__))
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _cli_flags():
    flags = set()
    parser = build_parser()
    for action in parser._subparsers._group_actions:
        for sub in action.choices.values():
            flags |= {
                f for f in sub._option_string_actions if f.startswith("--")
            }
    return flags - {"--help", "--version"}


def _library_files():
    for root, _, names in os.walk(PACKAGE_DIR):
        if os.path.relpath(root, PACKAGE_DIR).split(os.sep)[0] == "cli":
            continue
        for name in names:
            if name.endswith(".py"):
                yield os.path.join(root, name)


def _docstrings(tree):
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(
                first.value, ast.Constant
            ):
                found.add(id(first.value))
    return found


def test_library_messages_never_name_a_flag():
    flags = _cli_flags()
    assert {"--force", "--model", "--resume", "--out"} <= flags
    offenders = []
    for path in _library_files():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
            ):
                named = set(FLAG.findall(node.value)) & flags
                if named:
                    rel = os.path.relpath(path, PACKAGE_DIR)
                    offenders.append(f"{rel}:{node.lineno} {sorted(named)}")
    assert offenders == []


def test_no_library_module_imports_argparse_or_the_cli():
    offenders = []
    for path in _library_files():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name == "argparse" or name.startswith("keras_elmo.cli"):
                    rel = os.path.relpath(path, PACKAGE_DIR)
                    offenders.append(f"{rel}:{node.lineno} {name}")
    assert offenders == []


def test_the_command_line_speaks_in_flags():
    from keras_elmo.cli.main import flag_words

    flags = {"--force", "--batch-size", "--max-oov-rate", "--out"}
    assert flag_words("pass `force=True` now", flags) == "pass --force now"
    assert (
        flag_words("more than `max_oov_rate=0.5`;", flags)
        == "more than --max-oov-rate 0.5;"
    )
    assert (
        flag_words("argument `batch_size`", flags) == "argument `--batch-size`"
    )
    assert flag_words("`out_dir`", flags, {"out_dir": "--out"}) == "`--out`"
    # Names that are not this command's flags stay as they are.
    assert flag_words("`resume=True` and `layers`", flags) == (
        "`resume=True` and `layers`"
    )
    # `bare` (the model flags' spec messages): unquoted `name=` too.
    assert flag_words("got force=None out=1 x_out=2", flags, bare=True) == (
        "got --force=None --out=1 x_out=2"
    )
    assert flag_words("got force=None", flags) == "got force=None"
