#!/usr/bin/env bash
# clang-tidy (clang-tidy-14, checks in .clang-tidy, every finding an error) on the host's
# LibTorch-free rooms, the SDK's sources, the loggers' and tokenizers' file formats, and the
# threaded checkpoint code, the stop signals, the data sources (files, the Hub cache, Arrow):
# where strings, files, signals and threads are handled. The model and kernel
# TUs are left out: each parses all of LibTorch's headers (~10 s apiece), and the ASan/UBSan and
# TSan phases cover them at run time.
#   bash scripts/check_tidy.sh [BUILD_DIR]   (default build; needs its compile_commands.json)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build}"
if [[ ! -f "$build_dir/compile_commands.json" ]]; then
  echo "tidy: $build_dir/compile_commands.json missing: build first (bash scripts/build.sh)" >&2
  exit 2
fi
tidy=clang-tidy-14
command -v "$tidy" >/dev/null || { echo "tidy: $tidy not found (bash scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files ':(glob)core/plugin_host/*.cpp' ':(glob)core/config/*.cpp' ':(glob)core/cli/*.cpp' \
  core/main.cpp core/train/checkpoint_manager.cpp core/train/checkpoint_directories.cpp core/train/training_state.cpp \
  core/train/preemption_signals.cpp core/train/batch_prefetcher.cpp plugins/datasets/data_source.cpp core/train/data_loader.cpp \
  plugins/datasets/arrow_records.cpp plugins/datasets/record_source.cpp plugins/datasets/multimodal_message_transforms.cpp \
  plugins/datasets/multimodal_sft_dataset.cpp \
  plugins/optim/bitsandbytes_adam_update.cpp plugins/optim/bitsandbytes_optimizers.cpp plugins/optim/dynamic_quantization.cpp plugins/optim/optimizer_state_parts.cpp \
  ':(glob)sdk/src/*.cpp' ':(glob)sdk/src/ft_host/*.cpp' ':(glob)plugins/loggers/**/*.cpp' ':(glob)plugins/tokenizers/*.cpp' \
  ':(glob)plugins/datasets/images/*.cpp')
start=$(date +%s)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# GCC's own warning flags in the compile commands are unknown to clang: not findings.
status=0
printf '%s\n' "${files[@]}" | xargs -P "${FTHOST_JOBS:-2}" -n 4 "$tidy" -p "$build_dir" --quiet \
  --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1 || status=$?
grep -E "^(/|[a-z]).*(warning|error):" "$log" | sort -u || true
echo "tidy: ${#files[@]} files in $(($(date +%s) - start)) s: $([[ $status == 0 ]] && echo clean || echo "findings (exit $status)")"
exit "$status"
