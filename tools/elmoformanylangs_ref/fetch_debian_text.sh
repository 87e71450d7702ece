#!/usr/bin/env bash
# Real Chinese and German text for the full-size ELMoForManyLangs check,
# from Debian packages, into a cache (never committed).  Idempotent.
#
#   bash tools/elmoformanylangs_ref/fetch_debian_text.sh [OUT]
#
# OUT (default ~/.cache/keras_elmo_side/debian_text) receives
#   tang300.u8   from fortunes-zh (Debian bookworm main): the Three
#                Hundred Tang Poems (8th-century poems, public domain;
#                the package's collection and markup are GPL-3.0+);
#   sprichworte  from fortunes-de: German proverbs (traditional; the
#                package is GPL-2+);
# and each package's copyright file beside them.  Fortune files hold
# entries separated by "%" lines; tang300.u8 colours its title and
# author lines with ANSI escapes.  full_size_reference.py reads them.
set -euo pipefail

OUT="${1:-$HOME/.cache/keras_elmo_side/debian_text}"
if [ -s "$OUT/tang300.u8" ] && [ -s "$OUT/sprichworte" ]; then
  echo "fetch_debian_text.sh: $OUT is complete"
  exit 0
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && apt-get download fortunes-zh fortunes-de)
for deb in "$WORK"/*.deb; do
  dpkg -x "$deb" "$WORK/root"
done
mkdir -p "$OUT.tmp"
cp "$WORK/root/usr/share/games/fortunes/tang300.u8" "$OUT.tmp/"
cp "$WORK/root/usr/share/games/fortunes/de/sprichworte" "$OUT.tmp/"
cp "$WORK/root/usr/share/doc/fortunes-zh/copyright" "$OUT.tmp/copyright.fortunes-zh"
cp "$WORK/root/usr/share/doc/fortunes-de/copyright" "$OUT.tmp/copyright.fortunes-de"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "fetch_debian_text.sh: wrote $OUT"
