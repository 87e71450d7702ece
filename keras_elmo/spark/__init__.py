"""Deprecated alias of `keras_elmo.integrations.spark` (embedding on Apache
Spark).

Import `keras_elmo.integrations.spark` instead; this name re-exports its
public names and warns.
"""

import warnings

from keras_elmo.integrations.spark import *  # noqa: F401,F403
from keras_elmo.integrations.spark import __all__  # noqa: F401

warnings.warn(
    "keras_elmo.spark is deprecated: import keras_elmo.integrations.spark.",
    DeprecationWarning,
    stacklevel=2,
)
