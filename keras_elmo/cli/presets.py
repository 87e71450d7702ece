"""Prints the table of models usable by name, and which are cached.

    keras-elmo presets              # aligned columns for a terminal
    keras-elmo presets --markdown   # the Markdown table of docs/PRESETS.md
    keras-elmo presets --verify     # rehash every cached model's files

Each name works in `BiLM.from_preset(NAME)`, `ElmoLayer.from_preset(NAME)`
and every command's `--preset NAME`. Published models download once into
$KERAS_ELMO_CACHE (default $KERAS_HOME/keras_elmo/presets, KERAS_HOME
defaulting to ~/.keras); $KERAS_ELMO_PRESET_MIRROR replaces AllenNLP's
hosts with your own mirror.
"""

import sys

HELP = "Print the table of models by name."


def add_arguments(parser):
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="Print the full Markdown table (licences, pinned sha256, URLs) "
        "instead of the terminal table.",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="Rehash every file in the cache (--cache-dir) against the "
        "sha256 recorded when it was downloaded or unpacked and report "
        "each entry; exit 1 if any changed.",
    )
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="Cache folder for --verify (default: $KERAS_ELMO_CACHE, else "
        "$KERAS_HOME/keras_elmo/presets).",
    )


def run(args):
    import shutil

    from keras_elmo.presets.table import presets_table
    from keras_elmo.presets.table import terminal_table

    if args.verify:
        return _verify(args.cache_dir)
    if args.markdown:
        sys.stdout.write(presets_table())
    else:
        width = shutil.get_terminal_size((100, 24)).columns
        sys.stdout.write(terminal_table(width=width))
    return 0


def _verify(cache_dir):
    from keras_elmo.presets.download import cache_root
    from keras_elmo.presets.download import verify_cache

    root = cache_root(cache_dir)
    reports = verify_cache(cache_dir)
    sys.stdout.write(f"Cache {root}: {len(reports)} entries\n")
    for report in reports:
        line = f"  {report.status:<10}  {report.name}  ({report.files} files)"
        if report.problem:
            line += f": {report.problem}"
        sys.stdout.write(line + "\n")
    changed = [r.name for r in reports if r.status == "changed"]
    if changed:
        sys.stdout.write(
            f"{len(changed)} changed: delete them to fetch them again, or "
            "`keras-elmo download NAME --force`.\n"
        )
        return 1
    return 0
