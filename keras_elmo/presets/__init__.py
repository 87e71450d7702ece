"""Pretrained biLMs shipped inside the package (work offline).

Each preset is a folder `keras_elmo/presets/<name>/` holding the AllenNLP
files `options.json` and `weights.hdf5` (float16 storage is fine: the
loader casts to float32), plus `softmax.hdf5`, `vocab.txt` and
`MODEL_CARD.md`.
"""

import os

PRESETS_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PRESET = "elmo_small_en"  # what every entry point loads by default


def available_presets():
    """Names of the shipped presets (folders with options and weights)."""
    return sorted(
        name
        for name in os.listdir(PRESETS_DIR)
        if os.path.exists(os.path.join(PRESETS_DIR, name, "weights.hdf5"))
    )


def preset_dir(name):
    """The folder of preset `name`; a clear error naming the choices."""
    path = os.path.join(PRESETS_DIR, str(name))
    if not os.path.exists(os.path.join(path, "weights.hdf5")):
        raise ValueError(
            "Received an invalid value for argument `name`, expected one of "
            f"the shipped presets {available_presets()}, got {name!r}. "
            "(Architectures alone: keras_elmo.BiLMConfig.from_architecture.)"
        )
    return path
