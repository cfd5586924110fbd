#!/usr/bin/env bash
# Configures and builds fthost into ./build (Ninja, at most 2 jobs: a LibTorch TU needs ~1 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${FTHOST_JOBS:-2}"
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
start=$(date +%s)
cmake --build build -j"$jobs"
echo "build: done in $(( $(date +%s) - start )) s"
