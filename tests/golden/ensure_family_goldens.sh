#!/usr/bin/env bash
# ctest fixture: makes the family goldens in OUT with PYTHON unless OUT already holds a complete
# generation by this very generator (its SHA-256 is kept next to the output).
#   bash tests/golden/ensure_family_goldens.sh PYTHON OUT
set -euo pipefail
python="$1"
out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
generator="$here/make_family_goldens.py"
stamp="$(sha256sum "$generator" | cut -d' ' -f1)"
if [[ -f "$out/.complete" && "$(cat "$out/.generator-sha256" 2>/dev/null)" == "$stamp" ]]; then
  echo "family goldens: $out is up to date"
  exit 0
fi
echo "family goldens: generating into $out (torchtune and transformers model code, about 20 s)"
rm -f "$out/.generator-sha256"
OMP_NUM_THREADS=1 "$python" "$generator" --out "$out"
echo "$stamp" >"$out/.generator-sha256"
