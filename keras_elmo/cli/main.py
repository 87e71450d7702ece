"""`keras-elmo`: argparse front end; each command lives in its own module."""

import argparse
import logging
import os
import re
import sys

from keras_elmo.integrations.engine_logging import EngineFailed
from keras_elmo.version import __version__

# Command name -> module with `add_arguments(parser)` and `run(args)`.
COMMANDS = {
    "demo": "keras_elmo.cli.demo",
    "convert": "keras_elmo.cli.convert",
    "vocab": "keras_elmo.cli.vocab",
    "train": "keras_elmo.cli.train",
    "evaluate": "keras_elmo.cli.evaluate",
    "export": "keras_elmo.cli.export",
    "embed": "keras_elmo.cli.embed",
    "embed-records": "keras_elmo.cli.embed_records",
    "presets": "keras_elmo.cli.presets",
    "download": "keras_elmo.cli.download",
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions as written; each flag's help ends with its default
    where it has one worth showing (not None, False or an empty list) and
    the help does not already say it."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or "default" in text.lower()
            or default in (None, False, argparse.SUPPRESS)
            or default == []
            or not action.option_strings
        ):
            return text
        return f"{text} (default: %(default)s)"


def build_parser():
    """The whole parser; imports the command modules, never TensorFlow."""
    import importlib

    parser = argparse.ArgumentParser(
        prog="keras-elmo",
        description="ELMo for Keras 3: embed, convert, train, export.",
    )
    parser.add_argument(
        "--version", action="version", version=f"keras-elmo {__version__}"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="Log at INFO level, TensorFlow's start-up lines included.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(
            name,
            help=module.HELP,
            description=module.__doc__,
            formatter_class=HelpFormatter,
        )
        module.add_arguments(sub)
        sub.add_argument(  # also after the command: `embed ... -v`
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help="Log at INFO level, TensorFlow's start-up lines included.",
        )
        sub.set_defaults(
            run=module.run,
            command_parser=sub,
            flags=set(sub._option_string_actions),
            flag_aliases=getattr(module, "FLAG_ALIASES", {}),
            flag_hints=getattr(module, "FLAG_HINTS", {}),
        )
    return parser


def main(argv=None):
    """Runs one command; returns its exit status (2: a refused input).

    `argv` None reads the command line (`sys.argv`): a Ctrl-C then
    prints one line saying what was kept and returns 130. With an
    explicit `argv` (a caller in the same process) the line is printed
    and the `KeyboardInterrupt` goes on to the caller.
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        refusal = _check_extra_arguments(args, extra)
        if refusal:
            sys.stderr.write(f"keras-elmo {args.command}: error: {refusal}\n")
            return 2
        args.pipeline_options = extra
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    quiet_tensorflow(args.verbose)
    _load_library()
    try:
        return args.run(args) or 0
    except (ValueError, OSError, ImportError, TypeError) as e:
        message = flag_words(str(e), args.flags, args.flag_aliases)
        sys.stderr.write(f"keras-elmo {args.command}: error: {message}\n")
        return 2
    except EngineFailed as e:
        # The engine's cause first, in one line; its trace with -v.
        sys.stderr.write(f"keras-elmo {args.command}: error: {e}\n")
        if args.verbose:
            import traceback

            traceback.print_exception(e.__cause__ or e, file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        _interrupted(args, e)
        if argv is not None:
            raise  # an in-process caller decides what an interrupt means
        return 130


def _check_extra_arguments(args, extra):
    """Arguments no parser knows: argparse's own error in the command's
    usage (`--layers top`, `--batchsize 8`), after a line per flag saying
    what to use instead where the command knows (`FLAG_HINTS` of its
    module: `--layers` -> `--all`, `--top` or `--average`) or a flag is
    close. `embed` passes the others to Beam with `--runner`; without
    it, `--name=value` ones get the refusal returned here (naming
    `--runner`), before TensorFlow loads."""
    hints = _flag_hints(args, extra)
    if getattr(args, "accepts_pipeline_options", False):
        if getattr(args, "runner", None):
            if not hints:
                return None
        elif all(re.fullmatch(r"--\w[\w.-]*=.*", arg) for arg in extra):
            where = (
                "; Spark options go in --spark-conf"
                if getattr(args, "spark_master", None)
                else ""
            )
            return (
                f"Unrecognized arguments {extra}: "
                + "".join(f"{hint} " for hint in hints)
                + f"Beam pipeline options need --runner{where}."
            )
    parser = args.command_parser
    parser.print_usage(sys.stderr)
    for hint in hints:
        sys.stderr.write(f"{parser.prog}: {hint}\n")
    parser.exit(
        2,
        f"{parser.prog}: error: unrecognized arguments: {' '.join(extra)}\n",
    )


def _flag_hints(args, extra):
    """What to use instead of each unknown flag of `extra`: the
    command's `FLAG_HINTS` entry, else its closest flag (`--batchsize`
    -> `--batch-size`); none for a flag unlike any (a Beam option)."""
    import difflib

    flags = sorted(f for f in args.flags if f.startswith("--"))
    hints = []
    for arg in extra:
        name = arg.split("=", 1)[0]
        if not name.startswith("--"):
            continue
        if name in args.flag_hints:
            hints.append(
                f"{name} is not a flag of {args.command}: "
                f"{args.flag_hints[name]}."
            )
            continue
        close = difflib.get_close_matches(name, flags, n=1, cutoff=0.85)
        if close:
            hints.append(
                f"{name} is not a flag of {args.command}: did you mean "
                f"{close[0]}?"
            )
    return hints


def quiet_tensorflow(verbose):
    """Silences TensorFlow's and absl's start-up lines (oneDNN, CUDA
    drivers, `I0000`/`E0000`) unless `verbose`; a value the user set in
    the environment wins. Must run before TensorFlow is imported."""
    level = "0" if verbose else "3"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", level)
    os.environ.setdefault("GRPC_VERBOSITY", "INFO" if verbose else "ERROR")
    os.environ.setdefault("GLOG_minloglevel", "1" if verbose else "3")
    try:
        from absl import logging as absl_logging
    except ImportError:
        return
    if not verbose:
        absl_logging.set_verbosity(absl_logging.ERROR)


def _load_library():
    """Loads the library (TensorFlow, Keras, the API) as `import keras_elmo`
    does outside the CLI; quietly with `TF_CPP_MIN_LOG_LEVEL=3`
    (`keras_elmo._load_api`)."""
    import keras_elmo

    keras_elmo._load_api()


def _interrupted(args, error):
    """Ctrl-C: one line on stderr (what was kept, how to go on). From the
    command line (`argv` None) `main` then returns 130 (128 + SIGINT),
    with no traceback."""
    kept = getattr(error, "message", None)
    line = f"keras-elmo {args.command}: interrupted"
    if kept:
        line += ": " + flag_words(kept, args.flags, args.flag_aliases)
    sys.stderr.write(f"{line}\n")


def flag_name(name, aliases=None):
    """The flag of a library setting: `batch_size` -> `--batch-size`, or
    `aliases[name]` for a setting whose flag is not its name."""
    return (aliases or {}).get(name) or "--" + name.replace("_", "-")


def flag_words(message, flags, aliases=None, bare=False):
    """A library message in the command's words, where the command has
    the flags (the library never names a flag): `` `force=True` `` becomes
    `--force`, `` `max_oov_rate=0.5` `` `--max-oov-rate 0.5` and
    `` `batch_size` `` `` `--batch-size` `` (`aliases`: name -> flag for
    settings whose flag is not their name); with `bare`, also an unquoted
    `weights=None` `--weights=None`."""

    def setting(match):
        name = flag_name(match.group(1), aliases)
        if name not in flags:
            return match.group(0)
        value = match.group(2)
        return name if value == "True" else f"{name} {value}"

    def flag(match):
        name = flag_name(match.group(1), aliases)
        return f"`{name}`" if name in flags else match.group(0)

    def bare_setting(match):
        name = flag_name(match.group(1), aliases)
        return f"{name}=" if name in flags else match.group(0)

    message = re.sub(r"`(\w+)=([^`\s]+)`", setting, message)
    message = re.sub(r"`(\w+)`", flag, message)
    if bare:
        message = re.sub(r"(?<![\w`-])(\w+)=", bare_setting, message)
    return message


if __name__ == "__main__":
    sys.exit(main())
