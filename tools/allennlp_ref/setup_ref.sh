#!/usr/bin/env bash
# Create (or bring up to date) the AllenNLP reference venv.  Idempotent: a second run
# with nothing to do only re-checks the import and exits.
#
#   bash setup_ref.sh                 # venv at /tmp/elmo_ref/venv
#   REF_VENV=/some/dir bash setup_ref.sh
#   PYTHON=/usr/bin/python3.11 bash setup_ref.sh   # interpreter used to create the venv
#
# What it installs and why (see README.md, "Environment"):
#   * torch 2.13.0+cpu from a local wheel (pip's find-links, e.g. /opt/wheels), else
#     from the PyTorch CPU index.
# Kept in the repository (tools/allennlp_ref, see README.md).
#   * allennlp 2.10.1 with --no-deps: its declared pins (torch<1.13, transformers<4.21,
#     spacy<3.4, ...) have no Python 3.11 / torch 2.13 wheels.  Instead the exact closure
#     that `from allennlp.modules.elmo import _ElmoBiLm, _ElmoCharacterEncoder, Elmo,
#     batch_to_ids` imports (allennlp/__init__ imports transformers+spacy; allennlp.common
#     imports cached_path -> boto3 + google-cloud-storage, lmdb, dill, base58;
#     allennlp.data imports torchvision; allennlp.nn imports fairscale) is pinned below
#     and installed with --no-deps, so pip can never pull a different torch.
#   * torchvision 0.16.2 (pure-Python import only): every torchvision on PyPI is a CUDA
#     build whose C ops cannot load against CPU torch; 0.16.2 is the newest whose import
#     tolerates that (0.17+ register fake kernels for torchvision::nms and crash).  Only
#     allennlp/data/image_loader.py imports it; ELMo never calls it.
#   * fairscale 0.4.6 (allennlp's exact pin) is sdist-only: built locally, pure Python.
#   * setuptools < 81 because spacy 3.4 imports pkg_resources.
set -euo pipefail

VENV="${REF_VENV:-/tmp/elmo_ref/venv}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for c in python3.11 python3; do
    if command -v "$c" >/dev/null 2>&1 &&
       "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      PY="$c"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "setup_ref.sh: need a Python 3.11 interpreter (set PYTHON=...)" >&2; exit 1; }

BOOTSTRAP="setuptools==80.9.0 wheel==0.48.0 ninja==1.13.2"
TORCH="torch==2.13.0+cpu"

# Exact pins, installed with --no-deps (the closure `pip check` is happy with, apart from
# allennlp's own out-of-date pins and torchvision's torch==2.1.2 pin).
read -r -d '' LOCK <<'EOF' || true
allennlp==2.10.1
numpy==1.26.4
h5py==3.16.0
filelock==3.8.2
typing_extensions==4.16.0
sympy==1.14.0
mpmath==1.3.0
networkx==3.6.1
Jinja2==3.1.6
MarkupSafe==3.0.4
fsspec==2026.9.0
transformers==4.24.0
tokenizers==0.13.3
huggingface-hub==0.10.1
PyYAML==6.0.4
regex==2026.11.19
requests==2.34.2
certifi==2026.10.19.post1
charset-normalizer==3.5.3
idna==3.20
urllib3==2.8.0
tqdm==4.70.1
packaging==26.4
spacy==3.4.4
spacy-legacy==3.0.12
spacy-loggers==1.0.5
thinc==8.1.12
blis==0.7.11
catalogue==2.0.10
click==8.5.1
confection==0.1.5
cymem==2.0.16
langcodes==3.5.1
murmurhash==1.0.16
pathy==0.14.2
pathlib_abc==0.5.2
preshed==3.0.15
pydantic==1.10.27
smart-open==6.4.0
srsly==2.5.6
typer==0.7.0
wasabi==0.10.1
cached-path==1.1.6
rich==12.6.0
commonmark==0.9.2
Pygments==2.21.0
boto3==1.44.8
botocore==1.44.8
jmespath==1.1.0
s3transfer==0.19.3
python-dateutil==2.9.0.post0
six==1.17.0
google-cloud-storage==2.19.0
google-api-core==2.29.0
google-auth==2.63.0
google-cloud-core==2.8.0
google-crc32c==1.9.0
google-resumable-media==2.11.0
googleapis-common-protos==1.73.0
proto-plus==1.27.1
protobuf==3.20.3
pyasn1==0.6.5
pyasn1_modules==0.4.2
cryptography==50.0.2
cffi==2.1.1
pycparser==3.12
lmdb==3.0.0
dill==0.4.1
base58==2.1.1
more-itertools==11.2.1
torchvision==0.16.2
pillow==13.0.0
EOF
FAIRSCALE="fairscale==0.4.6"

STAMP="$VENV/.setup_ref.sha256"
WANT="$(printf '%s\n%s\n%s\n%s\n' "$BOOTSTRAP" "$TORCH" "$LOCK" "$FAIRSCALE" | sha256sum | cut -d' ' -f1)"

check_import() {
  "$VENV/bin/python" - <<'PYEOF'
import warnings, logging
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
import torch, numpy, h5py, allennlp
from allennlp.modules.elmo import _ElmoBiLm, _ElmoCharacterEncoder, Elmo, batch_to_ids
ids = batch_to_ids([["Hello", "world"]])
assert tuple(ids.shape) == (1, 2, 50) and int(ids[0, 0, 0]) == 259, ids[0, 0, :4]
print(f"ok: allennlp {allennlp.__version__}, torch {torch.__version__}, "
      f"numpy {numpy.__version__}, h5py {h5py.__version__}")
PYEOF
}

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && check_import 2>/dev/null; then
  echo "setup_ref.sh: $VENV is up to date"
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup_ref.sh: creating venv $VENV with $PY"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

# shellcheck disable=SC2086
"${PIP[@]}" install --no-deps --only-binary :all: $BOOTSTRAP
if ! "${PIP[@]}" install --no-deps --only-binary :all: "$TORCH"; then
  # No local +cpu wheel: the PyTorch CPU index serves it (never PyPI's
  # multi-GB CUDA build, which the +cpu local version cannot match).
  "${PIP[@]}" install --no-deps --only-binary :all: \
      --index-url https://download.pytorch.org/whl/cpu "$TORCH"
fi
LOCKFILE="$(mktemp)"
trap 'rm -f "$LOCKFILE"' EXIT
printf '%s\n' "$LOCK" > "$LOCKFILE"
"${PIP[@]}" install --no-deps --only-binary :all: -r "$LOCKFILE"
"${PIP[@]}" install --no-deps --no-build-isolation "$FAIRSCALE"

# report (do not remove) anything in the venv that is not in the lock
extra="$("$VENV/bin/python" -m pip freeze --all 2>/dev/null | sed 's/[ =@].*//' | tr 'A-Z_' 'a-z-' | sort -u |
         comm -23 - <(printf '%s\n%s\n%s\n%s\npip\n' "$BOOTSTRAP" "$TORCH" "$LOCK" "$FAIRSCALE" |
                      tr ' ' '\n' | sed 's/==.*//' | tr 'A-Z_' 'a-z-' | sort -u) || true)"
[ -z "$extra" ] || echo "setup_ref.sh: note, packages not in the lock: $(echo $extra)"

check_import
echo "$WANT" > "$STAMP"
echo "setup_ref.sh: done ($VENV)"
