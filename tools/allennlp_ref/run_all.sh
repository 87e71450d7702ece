#!/usr/bin/env bash
# End-to-end: venv -> random weights -> AllenNLP reference activations (.npz).
#   bash run_all.sh [CONFIG ...]        default: tiny tiny_tanh small small_tanh original
# Env: REF_VENV (default /tmp/elmo_ref/venv), REF_OUT (default /tmp/elmo_ref),
#      REF_THREADS (torch threads for allennlp_ref.py, default 2), REF_SEED (default 0).
# Kept in the repository (tools/allennlp_ref, see README.md); the weights come
# from tests/fixtures/make_weights.py.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${REF_VENV:-/tmp/elmo_ref/venv}"
OUT="${REF_OUT:-/tmp/elmo_ref}"
THREADS="${REF_THREADS:-2}"
SEED="${REF_SEED:-0}"
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(tiny tiny_tanh small small_tanh original)

REF_VENV="$VENV" bash "$HERE/setup_ref.sh"
PY="$VENV/bin/python"
mkdir -p "$OUT/w" "$OUT/out"
for name in "${configs[@]}"; do
  base="${name%_tanh}"; act=relu; [ "$base" = "$name" ] || act=tanh
  echo "=== $name"
  "$PY" "$HERE/../../tests/fixtures/make_weights.py" "$base" --activation "$act" --seed "$SEED" --out-dir "$OUT/w"
  "$PY" "$HERE/allennlp_ref.py" --options "$OUT/w/${name}_options.json" \
      --weights "$OUT/w/${name}_weights.hdf5" --sentences "$HERE/sentences.json" \
      --out "$OUT/out/${name}.npz" --threads "$THREADS" --diagnostics --float64
done
