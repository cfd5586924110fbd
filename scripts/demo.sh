#!/usr/bin/env bash
# Sets up, builds and runs the tiny demo training run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# One rank on a shared 2-core machine: keep OpenBLAS/OpenMP from spinning.
export OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=1
./build/bin/fthost --config configs/tiny_demo.toml "$@"
