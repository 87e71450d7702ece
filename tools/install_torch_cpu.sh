#!/usr/bin/env bash
# Installs the CPU build of the torch that setup.cfg's `torch` extra pins
# (torch==X there, installed as torch==X+cpu) into PYTHON's environment,
# never PyPI's torch==X wheel (the multi-GB CUDA build):
#
#   tools/install_torch_cpu.sh PYTHON
#
# 1. A torch-X+cpu wheel that fits PYTHON in a find-links folder (pip's
#    own find-links: $PIP_FIND_LINKS or its config file; and /opt/wheels
#    if that folder exists) is installed from there.
# 2. Otherwise it comes from the PyTorch CPU index,
#    https://download.pytorch.org/whl/cpu (which also serves its
#    dependencies).
# The `+cpu` local version matches no wheel on PyPI, so no other index
# can supply torch itself. `make test-torch` runs this before
# `pip install -e '.[test,torch]'`, whose torch==X is then satisfied.
set -euo pipefail
py="${1:?usage: tools/install_torch_cpu.sh PYTHON}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cpu_index="https://download.pytorch.org/whl/cpu"
pip=("$py" -m pip --disable-pip-version-check)

pin="$("$py" - "$root/setup.cfg" <<'EOF'
import configparser
import sys

config = configparser.ConfigParser()
config.read(sys.argv[1])
(pin,) = config["options.extras_require"]["torch"].split()
print(pin)
EOF
)"
case "$pin" in
    torch==[0-9]*) version="${pin#torch==}" ;;
    *) echo "setup.cfg's torch extra is '$pin', not torch==X" >&2; exit 1 ;;
esac
version="${version%+cpu}"
want="torch==$version+cpu"

installed="$("$py" -c 'import importlib.metadata as m; print(m.version("torch"))' \
    2>/dev/null || true)"
if [ "$installed" = "$version+cpu" ]; then
    echo "== torch $installed (CPU build) is already installed"
    exit 0
fi

links=()
if [ -d /opt/wheels ]; then links=(--find-links /opt/wheels); fi
if "${pip[@]}" install -q --dry-run --no-index --no-deps \
    ${links[@]+"${links[@]}"} "$want" >/dev/null 2>&1; then
    echo "== $want: a local wheel (find-links: /opt/wheels," \
        "\$PIP_FIND_LINKS=${PIP_FIND_LINKS:-unset} or pip's config);" \
        "its dependencies from the configured indexes"
    "${pip[@]}" install ${links[@]+"${links[@]}"} "$want"
else
    echo "== $want: no local wheel fits this Python; from the PyTorch CPU" \
        "index $cpu_index"
    "${pip[@]}" install --index-url "$cpu_index" "$want"
fi
