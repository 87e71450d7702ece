"""The results-file helpers for scripts run from benchmarks/ and examples/.

They live in the package (`keras_elmo.utils.provenance`) so that CLI
commands such as `keras-elmo evaluate --results` record the same fields.
"""

from keras_elmo.utils.provenance import provenance  # noqa: F401
from keras_elmo.utils.provenance import write_json  # noqa: F401
