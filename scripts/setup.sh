#!/usr/bin/env bash
# Installs every package Tempo needs. Idempotent: what is already present is skipped.
#   bash scripts/setup.sh          Debian packages (the default build), the tests' reference
#                                  Python packages (requirements-peers.txt)
#   bash scripts/setup.sh --cuda   also the CUDA LibTorch of the CUDA build (-DTEMPO_CUDA=ON)
#   bash scripts/setup.sh --fuzz   also clang 16 and its libFuzzer/sanitizer runtimes (fuzz/)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libisl-dev          # polyhedral scheduling
  libpcre2-dev        # the tokenizer's pre-tokenization patterns (Unicode properties)
  libmimalloc-dev     # the malloc of the tempo tool and the tests (CMakeLists.txt, TEMPO_MALLOC)
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
  python3-pip         # installs the CUDA LibTorch (--cuda)
  python3-venv        # python.pip_install's fresh virtual environment (Debian's python3)
  clang-format
  # the Polly baseline of `tempo loops bench` (clang's polyhedral optimizer, OpenMP runtime)
  clang-14 libomp-14-dev
)
if [ "${1:-}" = "--fuzz" ]; then
  # The fuzz targets (-DTEMPO_FUZZ=ON): clang 16, the first clang whose std::source_location
  # works with Debian 12's libstdc++ (clang 14's does not), and its libFuzzer, ASan and UBSan.
  PACKAGES+=(clang-16 libclang-rt-16-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# The reference packages the tests compare against (Gymnasium, HF tokenizers, MuJoCo, whose C
# library the build also links): about 40 MB, pinned in requirements-peers.txt, into a folder of
# their own that only the tests put on PYTHONPATH.
install_pinned() {  # REQUIREMENTS PREFIX
  local stamp="$2/.installed"
  if [ -f "$stamp" ] && cmp -s "$stamp" "$1"; then
    echo "setup: $(basename "$1") present in $2"
    return
  fi
  echo "setup: installing $(basename "$1") into $2"
  $SUDO rm -rf "$2"
  $SUDO env PIP_BREAK_SYSTEM_PACKAGES=1 /usr/bin/python3 -m pip install -q --no-deps \
    --disable-pip-version-check --root-user-action=ignore --target "$2" -r "$1"
  $SUDO cp "$1" "$stamp"
}
install_pinned scripts/requirements-peers.txt "$(bash scripts/peers_prefix.sh)"
# The peers of bench/rl_peers.py (CleanRL, Stable-Baselines3, EnvPool; ~850 MB installed, most
# of it EnvPool's assets) are pinned in requirements-bench.txt and requirements-bench-gym.txt and
# installed by bench/rl_peers.sh itself, not here.

# `pip install .`'s build requirements and NumPy as wheels, for the Python that python.pip_install
# makes its virtual environment with (scripts/pip_python.sh): the test installs them offline.
download_wheels() {  # REQUIREMENTS DIR
  local py stamp="$2/.downloaded"
  py="$(bash scripts/pip_python.sh)"
  local want
  want="$(cat "$1"; echo "# for $("$py" -c 'import sys; print(sys.executable, sys.version)')")"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "setup: $(basename "$1") wheels present in $2"
    return
  fi
  echo "setup: downloading $(basename "$1") wheels for $py into $2"
  $SUDO rm -rf "$2"
  $SUDO mkdir -p "$2"
  $SUDO "$py" -m pip download -q --no-deps --only-binary :all: --disable-pip-version-check \
    -d "$2" -r "$1"
  echo "$want" | $SUDO tee "$stamp" > /dev/null
}
download_wheels scripts/requirements-pip.txt "$(bash scripts/wheels_prefix.sh)"

if [ "${1:-}" = "--cuda" ]; then
  # PyPI's torch wheel and the CUDA libraries it loads, pinned in requirements-torch.txt, into
  # one folder of their own (scripts/torch_prefix.sh prints it); about 3.8 GB.
  if ! command -v nvcc > /dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: the CUDA build needs the CUDA toolkit 13 (nvcc, NVRTC) in /usr/local/cuda" >&2
    exit 1
  fi
  install_pinned scripts/requirements-torch.txt "$(bash scripts/torch_prefix.sh)"
fi
