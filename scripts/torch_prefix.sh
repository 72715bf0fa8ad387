#!/usr/bin/env bash
# Prints where scripts/setup.sh --cuda installs the CUDA LibTorch ($TEMPO_TORCH_PREFIX, else a
# folder named after the pinned version); its torch/ subfolder is CMake's prefix for Torch.
set -euo pipefail
version="$(sed -n 's/^torch==//p' "$(dirname "$0")/requirements-torch.txt")"
echo "${TEMPO_TORCH_PREFIX:-/opt/tempo-deps/torch-$version}"
