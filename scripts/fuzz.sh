#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) into ./build-fuzz with clang, ASan and UBSan, then
# fuzzes each for FUZZ_SECONDS (default 60) starting from its seed corpus in tests/fuzz/corpus/.
#   bash scripts/fuzz.sh [target...]      targets: config yaml_config safetensors tokenizer_json
#                                         image_orientation (default: all)
# New inputs go to build-fuzz/corpus/<target>/, crashes to build-fuzz/artifacts/<target>/. A crash
# becomes a regression test by copying its input into tests/fuzz/corpus/<target>/: ctest replays
# that directory in every build (test fuzz_corpus.<target>).
# FTHOST_CMAKE_ARGS adds configure options (CI: -DFTHOST_WERROR=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
jobs="${FTHOST_JOBS:-2}"
targets=("$@")
((${#targets[@]})) || targets=(config yaml_config safetensors tokenizer_json image_orientation)
cxx="${FTHOST_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++)}"
read -r -a extra_args <<< "${FTHOST_CMAKE_ARGS:-}"

start=$(date +%s)
mkdir -p build-fuzz
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  -DFTHOST_SANITIZE=address,undefined -DFTHOST_FUZZ=ON -DFTHOST_WITH_CUDA=OFF "${extra_args[@]}" > build-fuzz/configure.log \
  || { cat build-fuzz/configure.log; exit 1; }
cmake --build build-fuzz -j"$jobs" --target "${targets[@]/#/fuzz_}"
echo "fuzz: build done in $(( $(date +%s) - start )) s"

source tests/sanitizers/env.sh
failed=()
for target in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$target"
  artifacts="build-fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [[ -f "tests/fuzz/$target.dict" ]] && dict=(-dict="tests/fuzz/$target.dict")
  start=$(date +%s)
  # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: one that needs 4 GB is a bug.
  if ! "build-fuzz/bin/fuzz_$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
      -artifact_prefix="$artifacts/" -print_final_stats=1 "${dict[@]}" "$corpus" "tests/fuzz/corpus/$target" \
      > "build-fuzz/fuzz_$target.log" 2>&1; then
    failed+=("$target")
    tail -n 60 "build-fuzz/fuzz_$target.log"
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/fuzz_$target.log" | grep -o '[0-9]*$' || echo "?")
  echo "fuzz: $target ran $runs inputs in $(( $(date +%s) - start )) s"
done

if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]} (inputs in build-fuzz/artifacts/, logs in build-fuzz/fuzz_<target>.log)" >&2
  exit 1
fi
echo "fuzz: no crashes in ${targets[*]}"
