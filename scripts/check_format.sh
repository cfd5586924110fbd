#!/usr/bin/env bash
# Every tracked C++ and CUDA file in .clang-format's style (clang-format-14: another version
# formats some constructs differently). Prints each file that differs; `--fix` rewrites them.
set -euo pipefail
cd "$(dirname "$0")/.."
format=clang-format-14
command -v "$format" >/dev/null || { echo "format: $format not found (bash scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [[ "${1:-}" == --fix ]]; then
  "$format" -i "${files[@]}"
  echo "format: ${#files[@]} files formatted"
  exit 0
fi
mapfile -t unformatted < <("$format" --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
if ((${#unformatted[@]})); then
  printf 'format: not in .clang-format style: %s\n' "${unformatted[@]}"
  echo "format: ${#unformatted[@]} of ${#files[@]} files differ; bash scripts/check_format.sh --fix rewrites them"
  exit 1
fi
echo "format: ${#files[@]} files in style"
