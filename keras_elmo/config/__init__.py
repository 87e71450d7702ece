"""The biLM's hyper-parameters: `BiLMConfig` and bilm-tf `options.json`.

`bilm_config.py` holds the dataclass and the published architectures;
`options.py` translates it to and from the options file every weight format is
described by, so the readers in `weights/` can build a `BiLMConfig`.
"""

from keras_elmo.config.bilm_config import ARCHITECTURES
from keras_elmo.config.bilm_config import PRESETS
from keras_elmo.config.bilm_config import BiLMConfig

__all__ = ["ARCHITECTURES", "PRESETS", "BiLMConfig"]
