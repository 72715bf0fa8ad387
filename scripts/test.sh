#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite: in the default build, then in the CUDA build
# (-DTEMPO_CUDA=ON against PyPI's CUDA LibTorch), whose suite runs on the CPU and also compiles
# every generated CUDA kernel with NVRTC (tests named cuda_kernels.*).
#   TEMPO_CUDA_BUILD=auto (default): the CUDA build where the CUDA toolkit is installed
#   TEMPO_CUDA_BUILD=on: required (CI);  TEMPO_CUDA_BUILD=off: the default build alone
set -euo pipefail
cd "$(dirname "$0")/.."
cuda="${TEMPO_CUDA_BUILD:-auto}"
case "$cuda" in auto | on | off) ;; *) echo "test: TEMPO_CUDA_BUILD must be auto, on or off" >&2; exit 2 ;; esac
if [ "$cuda" = auto ]; then
  cuda=off
  { command -v nvcc > /dev/null || [ -x /usr/local/cuda/bin/nvcc ]; } && cuda=on
  [ "$cuda" = off ] && echo "test: no CUDA toolkit (nvcc): the CUDA build is skipped"
fi

if [ "$cuda" = on ]; then bash scripts/setup.sh --cuda; else bash scripts/setup.sh; fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"

if [ "$cuda" = on ]; then
  # No benchmarks: the default build has them, and the CUDA build's run on a GPU (gpu.sh).
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEMPO_CUDA=ON \
    -DTEMPO_BUILD_BENCH=OFF -DCMAKE_PREFIX_PATH="$(bash scripts/torch_prefix.sh)/torch"
  cmake --build build-cuda -j"$(nproc)"
  ctest --test-dir build-cuda --output-on-failure -j"$(nproc)"
fi
