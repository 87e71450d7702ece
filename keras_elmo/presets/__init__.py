"""Pretrained biLMs shipped inside the package (work offline).

Each preset is a folder `keras_elmo/presets/<name>/` holding the AllenNLP
files `options.json` and `weights.hdf5` (float16 storage is fine: the
loader casts to float32), plus `softmax.hdf5`, `vocab.txt` and
`MODEL_CARD.md`.

`keras_elmo.presets.sources` lists them (`available_presets`,
`preset_dir`) beside the resolver that loads them.
"""

from keras_elmo.presets.sources import DEFAULT_PRESET
from keras_elmo.presets.sources import PRESETS_DIR
from keras_elmo.presets.sources import available_presets
from keras_elmo.presets.sources import preset_dir

__all__ = ["DEFAULT_PRESET", "PRESETS_DIR", "available_presets", "preset_dir"]
