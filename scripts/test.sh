#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=1
export FT_FIXTURES="${FT_FIXTURES:-$(pwd)/../shared/fixtures}"
ctest --test-dir build --output-on-failure -j2
