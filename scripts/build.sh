#!/usr/bin/env bash
# Configures and builds fthost into ./build (Ninja, at most 2 jobs: a LibTorch TU needs ~1 GB).
# FTHOST_BUILD_DIR picks another build directory (scripts/test.sh --sanitize uses build-asan);
# Arguments, when given, are the targets to build (default: all).
# FTHOST_CMAKE_ARGS adds configure options (CI: -DFTHOST_WERROR=ON) and reconfigures when set.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${FTHOST_JOBS:-2}"
build_dir="${FTHOST_BUILD_DIR:-build}"
read -r -a extra_args <<< "${FTHOST_CMAKE_ARGS:-}"
if [[ ! -f "$build_dir/CMakeCache.txt" || ${#extra_args[@]} -gt 0 ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${extra_args[@]}"
fi
start=$(date +%s)
cmake --build "$build_dir" -j"$jobs" ${1:+--target "$@"}
echo "build: $build_dir done in $(( $(date +%s) - start )) s"
