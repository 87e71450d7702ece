"""Prints the table of models usable by name (Markdown).

    keras-elmo presets

Each name works in `BiLM.from_preset(NAME)`, `ElmoLayer.from_preset(NAME)`
and every command's `--preset NAME`. Published models download once into
$KERAS_ELMO_CACHE (default $KERAS_HOME/keras_elmo/presets, KERAS_HOME
defaulting to ~/.keras); $KERAS_ELMO_PRESET_MIRROR replaces AllenNLP's
hosts with your own mirror.
"""

import sys

HELP = "Print the table of models by name."


def add_arguments(parser):
    del parser  # no options


def run(args):
    from keras_elmo.presets.table import presets_table

    sys.stdout.write(presets_table())
    return 0
