#!/usr/bin/env bash
# Installs the peers of bench/decode_peers.py (scripts/requirements-bench-llm.txt: llama.cpp built
# from source, and gguf) into $TEMPO_BENCH_PREFIX (default /opt/tempo-deps/bench) once, and runs
# it with the arguments given (e.g. --shapes d768,1b --tokens 128,512).
# Needs build/tempo and the CUDA torch of `scripts/setup.sh --cuda` (scripts/torch_prefix.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${TEMPO_BENCH_PREFIX:-/opt/tempo-deps/bench}"
source "$root/bench/peers_install.sh"
install "$root/scripts/requirements-bench.txt" "$prefix/gymnasium"  # what torch imports
# llama.cpp for this machine's CPU, on its own thread pool (1 thread in the benchmark).
CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF" \
  install "$root/scripts/requirements-bench-llm.txt" "$prefix/llm"
torch="$(torch_prefix)"
PYTHONPATH="$prefix/llm:$torch:$prefix/gymnasium" \
  exec "$py" "$root/bench/decode_peers.py" --tempo "$root/build/tempo" "$@"
