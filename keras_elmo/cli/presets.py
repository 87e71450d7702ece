"""Prints the table of models usable by name, and which are cached.

    keras-elmo presets              # aligned columns for a terminal
    keras-elmo presets --markdown   # the Markdown table of docs/PRESETS.md

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
        help="Print the full Markdown table (licences, checksums, URLs) "
        "instead of the terminal table.",
    )


def run(args):
    import shutil

    from keras_elmo.presets.table import presets_table
    from keras_elmo.presets.table import terminal_table

    if args.markdown:
        sys.stdout.write(presets_table())
    else:
        width = shutil.get_terminal_size((100, 24)).columns
        sys.stdout.write(terminal_table(width=width))
    return 0
