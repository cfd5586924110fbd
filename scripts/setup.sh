#!/usr/bin/env bash
# Installs every Debian package fthost needs to build, test and run. Idempotent:
# it asks apt only for what is missing and runs `apt-get update` at most once.
#   bash scripts/setup.sh           what the build and the tests need
#   bash scripts/setup.sh --bench   also Debian's python3-torch, for bench/compare_pytorch.py only
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache lld
  libtorch-dev libopenblas0-pthread
  libboost-dev libboost-filesystem-dev libboost-program-options-dev
  libspdlog-dev libfmt-dev libtomlplusplus-dev libgtest-dev nlohmann-json3-dev zlib1g-dev
  libgloo-dev
  libpcre2-dev libsentencepiece-dev libicu-dev
  libyaml-cpp-dev  # torchtune YAML configs read directly (core/yaml_config.cpp)
  clang-14 libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer and clang's sanitizer runtimes
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch)  # the PyTorch eager yardstick; never needed by a test
elif [[ $# -gt 0 ]]; then
  echo "setup: unknown option $1 (the only one is --bench)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
