#!/usr/bin/env bash
# Sets up, builds and runs the tiny demo training run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# fthost sets its thread pools itself (num_threads, OpenBLAS, OMP_WAIT_POLICY=PASSIVE unless set).
./build/bin/fthost --config configs/tiny_demo.toml "$@"
