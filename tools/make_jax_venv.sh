#!/usr/bin/env bash
# A side venv for the JAX backend on top of an existing keras_elmo venv:
# it sees that venv's packages (TensorFlow, Keras, h5py, keras_elmo) via
# a .pth file and adds jax[cpu] only, so the suite's venv stays as it is.
#
#   tools/make_jax_venv.sh [BASE_VENV] [SIDE_VENV]
#   KERAS_ELMO_JAX_PYTHON=SIDE_VENV/bin/python pytest -q tests/backends
#   KERAS_BACKEND=jax SIDE_VENV/bin/python -c "import keras_elmo"  # repo root
#
# Defaults: BASE_VENV=.venv, SIDE_VENV=~/.cache/keras_elmo_side/jax.
# (CI needs none of this: the `test` extra installs jax[cpu] itself.)
set -euo pipefail
base="$(cd "${1:-.venv}" && pwd)"
side="${2:-$HOME/.cache/keras_elmo_side/jax}"
site="$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$base/bin/python" -m venv "$side"
side_site="$("$side/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$site" > "$side_site/base_venv.pth"
"$side/bin/python" -m pip install --disable-pip-version-check -q "jax[cpu]"
"$side/bin/python" -c 'import jax, keras; print("jax", jax.__version__, "keras", keras.__version__)'
echo "JAX side venv ready: KERAS_ELMO_JAX_PYTHON=$side/bin/python"
