#!/usr/bin/env bash
# Create (or re-check) the ELMoForManyLangs reference venv.  Idempotent.
#
#   bash tools/elmoformanylangs_ref/setup_efml.sh
#   EFML_VENV=/some/dir bash tools/elmoformanylangs_ref/setup_efml.sh
#
# Default venv: ~/.cache/keras_elmo_side/efml.  What it installs and why:
#   * torch==2.13.0 alone, with --no-deps --only-binary: pip's find-links
#     (/opt/wheels here) holds the CPU wheel torch-2.13.0+cpu; an unpinned
#     torch would pull a multi-GB CUDA build, so the script refuses to go
#     on when that exact version is not found locally.
#   * elmoformanylangs==0.0.4.post2 (the PyPI release) with overrides<4:
#     0.0.4 does `from overrides import overrides`, which overrides 4+
#     turned into a strict decorator that rejects the package's methods.
#   * the rest pinned exactly (what `pip freeze` gave on 2026-12-01).
set -euo pipefail

VENV="${EFML_VENV:-$HOME/.cache/keras_elmo_side/efml}"
PY="${PYTHON:-python3.11}"

LOCK="elmoformanylangs==0.0.4.post2 overrides==3.1.0 numpy==2.4.6 h5py==3.16.0
filelock==4.3.1 fsspec==2026.9.0 Jinja2==3.1.6 MarkupSafe==3.0.4 mpmath==1.3.0
networkx==3.6.1 sympy==1.14.0 typing_extensions==4.16.0"

check() {
  "$VENV/bin/python" - <<'PYEOF'
import torch, elmoformanylangs, overrides
from elmoformanylangs import Embedder  # noqa: F401
assert torch.__version__.startswith("2.13.0"), torch.__version__
print(f"ok: torch {torch.__version__}, elmoformanylangs at "
      f"{elmoformanylangs.__file__}")
PYEOF
}

if [ -x "$VENV/bin/python" ] && check 2>/dev/null; then
  echo "setup_efml.sh: $VENV is up to date"
  exit 0
fi
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
if ! "${PIP[@]}" install --no-deps --only-binary :all: "torch==2.13.0"; then
  echo "setup_efml.sh: torch==2.13.0 is expected as a local CPU wheel" \
       "(pip find-links); refusing to download a CUDA build." >&2
  exit 1
fi
# shellcheck disable=SC2086
"${PIP[@]}" install --no-deps $LOCK
check
