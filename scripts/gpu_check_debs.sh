#!/usr/bin/env bash
# Downloads (on a Debian 12 machine) the .deb files scripts/gpu_check.sh unpacks on a CUDA
# machine that has PyTorch but none of fthost's other build dependencies.
#   scripts/gpu_check_debs.sh DEB_DIR
set -euo pipefail
mkdir -p "$1"
cd "$1"
apt-get download \
  libboost1.74-dev libboost-filesystem1.74-dev libboost-filesystem1.74.0 \
  libboost-program-options1.74-dev libboost-program-options1.74.0 libboost-system1.74-dev libboost-system1.74.0 \
  libboost-atomic1.74-dev libboost-atomic1.74.0 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 \
  libtomlplusplus-dev libtomlplusplus3 libgtest-dev nlohmann-json3-dev libpcre2-dev libpcre2-8-0 \
  libsentencepiece-dev libsentencepiece0 libicu-dev libicu72 zlib1g-dev pkgconf pkgconf-bin libpkgconf3 libgloo-dev \
  libjemalloc-dev libjemalloc2
