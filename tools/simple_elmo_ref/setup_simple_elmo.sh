#!/usr/bin/env bash
# Create (or bring up to date) the simple_elmo side venv.  Idempotent: a second run
# with nothing to do only re-checks the import and exits.
#
#   bash tools/simple_elmo_ref/setup_simple_elmo.sh
#   SIMPLE_ELMO_VENV=/some/dir bash tools/simple_elmo_ref/setup_simple_elmo.sh
#
# simple_elmo (ltgoslo, GPL-3.0) is bilm-tf's TF1 graph code run through
# tf.compat.v1.  On TensorFlow 2.21 its tf.compat.v1.nn.rnn_cell.LSTMCell needs
# the legacy Keras 2 package: tf-keras, and TF_USE_LEGACY_KERAS=1 in the
# environment of every process that imports it (run_simple_elmo.py sets it).
# It lives in its own venv so that keras_elmo's venv (Keras 3) never sees it.
set -euo pipefail

VENV="${SIMPLE_ELMO_VENV:-$HOME/.cache/keras_elmo_side/simple_elmo}"
PY="${PYTHON:-python3.11}"

# Exact pins of what the harness imports; pip resolves the rest.
PINS="simple-elmo==0.9.2 tensorflow==2.21.0 tf-keras==2.21.0 h5py==3.14.0"

STAMP="$VENV/.setup_simple_elmo.sha256"
WANT="$(printf '%s\n' "$PINS" | sha256sum | cut -d' ' -f1)"

check_import() {
  TF_USE_LEGACY_KERAS=1 TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" - <<'PYEOF'
import importlib.metadata as md
import simple_elmo  # noqa: F401
import tensorflow as tf
print(f"ok: simple-elmo {md.version('simple-elmo')}, tensorflow {tf.__version__}, "
      f"tf-keras {md.version('tf-keras')}")
PYEOF
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && check_import 2>/dev/null; then
  echo "setup_simple_elmo.sh: $VENV is up to date"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup_simple_elmo.sh: creating venv $VENV with $PY"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip --disable-pip-version-check install --only-binary :all: $PINS
check_import
echo "$WANT" > "$STAMP"
echo "setup_simple_elmo.sh: done ($VENV)"
