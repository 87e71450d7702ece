"""What the docs tests share: a page's fenced code blocks, the commands
of a shell block, and `keras-elmo` commands run as a reader runs them.

`code_blocks(page)` is the one reading of a page's blocks
(`tests/docs/code_blocks_test.py` runs or checks each of them,
`tests/docs/readme_test.py` runs README.md's by position);
`shell_commands(code)` splits a shell block into commands;
`keras_elmo(argv, cwd, env)` runs one `keras-elmo ...` command in a
process of its own (a fork of the CLI zygote, `tests.cli_process`: the
TensorFlow import paid once per test process, not once per command).
"""

import os
import re
import shlex

from tests import cli_process

REPO = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
MARKER = re.compile(
    r"^\s*<!-- docs: (?P<kind>tested by|needs|not code|runs after)\b"
    r"(?P<rest>[^>]*)-->\s*$"
)


def code_blocks(page):
    """`(line, lang, code, marker)` of each fenced block of `page` (a
    path relative to the repository), in order: `line` the 1-based line
    of its opening fence, `code` its lines without the fence's
    indentation (ending in a newline), `marker` the `MARKER` match of
    the line before, or None."""
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = i + 1
        while not re.match(r"^ *```\s*$", lines[end]):
            end += 1
        indent = len(opening.group("indent"))
        code = "\n".join(line[indent:] for line in lines[i + 1 : end])
        marker = MARKER.match(lines[i - 1]) if i else None
        found.append((i + 1, opening.group("lang"), code + "\n", marker))
        i = end + 1
    return found


def shell_commands(code):
    """The argv of each command of a shell block (`\\` continuations
    joined, comments dropped)."""
    joined = code.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            commands.append(argv)
    return commands


def keras_elmo(argv, cwd, env, timeout=900):
    """Runs the command `argv` (`["keras-elmo", ...]`) in folder `cwd`
    with environment `env`, TensorFlow's start-up lines off as
    `keras-elmo` has them when the variable is unset (which lets
    `tests.cli_process` fork it); a `subprocess.CompletedProcess`."""
    assert argv[0] == "keras-elmo", argv
    env = dict(env, TF_CPP_MIN_LOG_LEVEL="3")
    return cli_process.run(argv[1:], env, timeout=timeout, cwd=cwd)
