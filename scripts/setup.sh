#!/usr/bin/env bash
# Installs every Debian package Tempo needs. Idempotent: packages already present are skipped.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libisl-dev          # polyhedral scheduling
  libtorch-dev        # tensor backend (LibTorch, CPU)
  libgloo-dev         # Gloo's headers, which LibTorch's c10d process groups include (data parallel)
  # An optimized BLAS for LibTorch's matmuls: it takes over libblas.so.3 through Debian's
  # alternatives (the reference BLAS is 2-5x slower on the RL benchmarks). The pthread flavour at
  # one thread measured fastest; see README "Performance settings".
  libopenblas0-pthread
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  # the Python module (python/): bindings, arrays, tests; built against Debian's /usr/bin/python3
  python3-dev python3-pybind11 python3-numpy python3-pytest
  clang-format
  # the Polly baseline of `tempo loops bench` (clang's polyhedral optimizer, OpenMP runtime)
  clang-14 libomp-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
