#!/usr/bin/env bash
# Installs the peers of bench/rl_peers.py (scripts/requirements-bench.txt and
# requirements-bench-gym.txt) into $TEMPO_BENCH_PREFIX (default /opt/tempo-deps/bench) once, and
# runs it with the arguments given (e.g. --full, --algos dqn,ppo, --out table.md).
# Needs the CUDA torch of `scripts/setup.sh --cuda` (scripts/torch_prefix.sh), build/tempo and,
# for the environment table, build-bench/bench_envs (-DTEMPO_BUILD_BENCH=ON).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${TEMPO_BENCH_PREFIX:-/opt/tempo-deps/bench}"
source "$root/bench/peers_install.sh"
install "$root/scripts/requirements-bench.txt" "$prefix/gymnasium"
install "$root/scripts/requirements-bench-gym.txt" "$prefix/gym"

torch="$(torch_prefix)"
exec "$py" "$root/bench/rl_peers.py" --prefix "$prefix" --torch-prefix "$torch" "$@"
