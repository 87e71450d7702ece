"""The results-file helpers for scripts run from benchmarks/ and examples/.

They live in the package (`keras_elmo.utils.provenance`) so that CLI
commands such as `keras-elmo evaluate --results` record the same fields.

This checkout goes first on `sys.path`, so that a script run from a clone
records (and measures) that clone's `keras_elmo`, not whichever checkout
the venv's editable install points at.
"""

import os
import sys

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path[:1] != [_CHECKOUT]:
    sys.path.insert(0, _CHECKOUT)

from keras_elmo.utils.provenance import provenance  # noqa: E402, F401
from keras_elmo.utils.provenance import write_json  # noqa: E402, F401
