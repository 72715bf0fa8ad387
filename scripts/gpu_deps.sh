#!/usr/bin/env bash
# Downloads (does not install) the Debian packages that scripts/gpu.sh unpacks on a GPU machine
# without network access: isl, GoogleTest, Google Benchmark and pkg-config, into .gpu-deps/
# (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-deps
cd .gpu-deps
apt-get update -qq
apt-get download libisl-dev libisl23 libgtest-dev libgmock-dev googletest libbenchmark-dev \
  libbenchmark1debian pkgconf pkgconf-bin libpkgconf3
ls -1 *.deb
