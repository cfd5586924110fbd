#!/usr/bin/env bash
# The one prepared check for a GPU machine (an H200 with a CUDA PyTorch installed, no network):
# builds fthost against that machine's PyTorch, runs the GPU tests (tests/gpu, ctest -L gpu), then
# the GPU benchmark (bench/gpu_benchmark.py), and writes one report. Meant to finish within 8
# minutes on 16 cores; each phase's time is in the report.
#
#   scripts/gpu_check.sh REPORT_DIR [--debs DIR] [--fixtures DIR] [--wheels DIR]
#
#   --debs DIR      fthost's other build dependencies as .deb files (scripts/gpu_check_debs.sh
#                   downloads them on Debian 12), unpacked into a private prefix, never into /
#   --fixtures DIR  the test fixtures (FT_FIXTURES; default ../shared/fixtures)
#   --wheels DIR    torchtune 0.6.1, torchao 0.11.0 and torchdata 0.11.0 with their dependencies, for
#                   the benchmark's torchtune side (on a machine with PyPI: python3 -m pip download
#                   -d DIR torchtune==0.6.1 torchao==0.11.0 torchdata==0.11.0, then delete the torch
#                   and nvidia wheels: the GPU machine has its own); torchao 0.12 and later lack the
#                   nf4tensor module torchtune 0.6.1 imports
# FT_GPU_CHECK_TESTS narrows the GPU tests (a ctest -R regex) when device time is short.
set -uo pipefail
cd "$(dirname "$0")/.."
report=$(realpath -m "${1:?usage: scripts/gpu_check.sh REPORT_DIR [--debs DIR] [--fixtures DIR] [--wheels DIR]}")
shift
deb_dir="" wheels="" fixtures=$(realpath -m ../shared/fixtures)
while (($#)); do
  case "$1" in
    --debs) deb_dir=$(realpath "$2"); shift 2 ;;
    --fixtures) fixtures=$(realpath "$2"); shift 2 ;;
    --wheels) wheels=$(realpath "$2"); shift 2 ;;
    *) echo "gpu_check: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$report"
exec > >(tee "$report/report.txt") 2>&1
jobs=$(nproc)
started=$(date +%s)
section() { echo; echo "=== $* (+$(( $(date +%s) - started )) s)"; }

section "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
g++ --version | head -1 || { echo "no g++"; exit 1; }
cmake --version | head -1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())), "devices", torch.cuda.device_count())'

cmake_prefix=()
if [[ -n "$deb_dir" ]]; then
  section "dependencies from $deb_dir"
  prefix=/opt/fthost-deps
  mkdir -p "$prefix"
  for f in "$deb_dir"/*.deb; do dpkg -x "$f" "$prefix"; done
  multiarch=$prefix/usr/lib/x86_64-linux-gnu
  export PKG_CONFIG_SYSROOT_DIR=$prefix PKG_CONFIG_LIBDIR=$multiarch/pkgconfig:$prefix/usr/share/pkgconfig
  export LD_LIBRARY_PATH=$multiarch:${LD_LIBRARY_PATH:-}
  cmake_prefix=(-DCMAKE_PREFIX_PATH="$prefix/usr" -DPKG_CONFIG_EXECUTABLE="$(command -v pkg-config || echo "$prefix/usr/bin/pkgconf")")
fi

section "configure against $(command -v python3)'s PyTorch"
# The device image may lack pyarrow 22 (and cannot install it; 23+ needs C++20): the GPU checks
# read no Parquet.
arrow=()
python3 -c 'import pyarrow, sys; sys.exit(pyarrow.__version__.split(".")[0] != "22")' 2>/dev/null ||
  arrow=(-DFTHOST_WITH_ARROW=OFF)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFTHOST_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFTHOST_PYTHON="$(command -v python3)" "${arrow[@]}" "${cmake_prefix[@]}" >"$report/configure.log" 2>&1
rc=$?
grep "fthost:" "$report/configure.log"
[[ $rc -eq 0 ]] || { tail -30 "$report/configure.log"; exit 2; }

section "build (-k 0: every error at once)"
cmake --build build-gpu -j"$jobs" --target fthost fthost_training fthost_gpu_tests -- -k 0 >"$report/build.log" 2>&1
rc=$?
grep -E "error" "$report/build.log" | grep -v Werror | head -40
[[ $rc -eq 0 ]] || exit 3
build-gpu/bin/fthost --version

section "GPU tests (ctest -L gpu)"
export FT_FIXTURES=$fixtures OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=1
ctest --test-dir build-gpu -L gpu -R "${FT_GPU_CHECK_TESTS:-.}" --timeout 180 --output-on-failure >"$report/tests.log" 2>&1
tests_rc=$?
grep -E "tests passed|Failed|\*\*\*|Not Run" "$report/tests.log" | head -40

section "GPU benchmark (bench/gpu_benchmark.py)"
if [[ -n "$wheels" ]]; then
  python3 -m pip install --no-index --find-links "$wheels" torchtune==0.6.1 torchao==0.11.0 torchdata==0.11.0 \
    >"$report/pip.log" 2>&1 \
    || echo "torchtune's wheels did not install (pip.log): the benchmark runs fthost alone"
fi
PYTHONUNBUFFERED=1 python3 bench/gpu_benchmark.py --fthost build-gpu/bin/fthost --report "$report" --fixtures "$fixtures"
section "done"
exit "$tests_rc"
