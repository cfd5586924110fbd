#!/usr/bin/env bash
# Installs everything fthost needs to build, test and run: Debian's packages, and LibTorch as
# PyTorch's own wheel (pinned in scripts/python-requirements.txt) in the project's virtual
# environment .venv, where CMake finds it (cmake/FthostTorch.cmake). Idempotent: it asks apt only
# for what is missing (running `apt-get update` at most once) and pip only when a pinned version is
# not the one installed.
#   bash scripts/setup.sh                    build and run
#   bash scripts/setup.sh --with-references  also the reference implementations the tests'
#                                            golden trajectories are made with (torchtune,
#                                            transformers: scripts/reference-requirements.txt), and
#                                            the logging services' packages the logger tests
#                                            read runs back with (mlflow, comet_ml:
#                                            scripts/logger-reference-requirements.txt, in
#                                            their own environment .venv-loggers)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config ccache lld
  libboost-dev libboost-filesystem-dev libboost-program-options-dev
  libspdlog-dev libfmt-dev libtomlplusplus-dev libgtest-dev nlohmann-json3-dev zlib1g-dev
  libgloo-dev
  libpcre2-dev libsentencepiece-dev libicu-dev
  libyaml-cpp-dev  # torchtune YAML configs read directly (core/config/yaml_config.cpp)
  libjemalloc-dev  # the fthost executable's allocator (core/CMakeLists.txt, docs/plan.md)
  libzip-dev  # the Comet logger's offline experiment archive (plugins/loggers/comet)
  libjpeg62-turbo-dev libpng-dev libwebp-dev  # image decoding (plugins/datasets/images)
  libcurl4-openssl-dev  # the MLflow logger's tracking-server client (plugins/loggers/formats/http_client.h)
  unzip  # tests/install/wheel_test.sh reads the wheel's listing
  clang-14 libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer and clang's sanitizer runtimes
  iproute2  # `ip netns`: tests/multinode's simulated hosts
  clang-format-14 clang-tidy-14  # scripts/check_format.sh, scripts/check_tidy.sh (CI)
  libomp-14-dev  # omp.h for clang-tidy on the OpenMP-compiled kernels (ATen's ParallelOpenMP.h includes it)
)
with_references=0
for arg in "$@"; do
  case "$arg" in
    --with-references) with_references=1 ;;
    *) echo "setup: unknown option $arg (it takes --with-references)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} Debian packages present"
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# PyTorch (LibTorch's headers, libraries and CMake package, and the CUDA, cuDNN and NCCL libraries
# it was built with) from PyPI. The machine's python3 (3.10 or newer) makes the environment.
# install_pins ENV FILE WHAT: makes the virtual environment ENV when absent, and installs FILE's
# pins into it unless every one is already installed.
install_pins() {
  local venv="$1" requirements="$2" what="$3"
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup: creating $venv"
    python3 -m venv "$venv"
  fi
  if "$venv/bin/python" scripts/check_requirements.py "$requirements"; then
    echo "setup: $venv has every pinned package of $requirements"
  else
    echo "setup: installing $requirements into $venv ($what)"
    "$venv/bin/python" -m pip install --progress-bar off -r "$requirements"
    "$venv/bin/python" scripts/check_requirements.py "$requirements" --verbose
  fi
}

install_pins .venv scripts/python-requirements.txt "PyTorch with its CUDA libraries: about 4.5 GB"
if ((with_references)); then
  install_pins .venv scripts/reference-requirements.txt "torchtune, transformers: the tests' golden references"
  install_pins .venv-loggers scripts/logger-reference-requirements.txt "mlflow, comet_ml: the logger tests' readers"
fi
