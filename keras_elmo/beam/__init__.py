"""Deprecated alias of `keras_elmo.integrations.beam` (embedding on Apache
Beam).

Import `keras_elmo.integrations.beam` instead; this name re-exports its
public names and warns.
"""

import warnings

from keras_elmo.integrations.beam import *  # noqa: F401,F403
from keras_elmo.integrations.beam import __all__  # noqa: F401

warnings.warn(
    "keras_elmo.beam is deprecated: import keras_elmo.integrations.beam.",
    DeprecationWarning,
    stacklevel=2,
)
