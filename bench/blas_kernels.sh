#!/usr/bin/env bash
# OpenBLAS's kernels: the same `tempo train` runs with the SSE3 kernels OpenBLAS falls back to on
# a CPU model it does not know (OPENBLAS_CORETYPE=Prescott) and with those Tempo selects for the
# CPU's instruction set (libtorch_backend.cpp), alternated, one thread each. Prints the best
# wall time (compile + run) of each and their ratio; the final returns show whether the runs
# learned alike (the kernels round differently, so the runs are not equal bit for bit).
#
#   bench/blas_kernels.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-2}
tempo="$build/tempo"
[ -x "$tempo" ] || { echo "no $tempo: build the tempo target first" >&2; exit 1; }
export OMP_NUM_THREADS=1
selected=$(env -u OPENBLAS_CORETYPE "$tempo" train ppo --iterations 1 --verbose 2>&1 |
  sed -n 's/.*BLAS \(.*\)$/\1/p' | head -1)
[ -n "$selected" ] || { echo "this build's BLAS is not OpenBLAS" >&2; exit 1; }
# the main job, then SAC and TD3 learning on most of their steps
runs=("ppo --env CartPole-v1 --seed 1"
      "sac --env Pendulum-v1 --iterations 2000 --learning-starts 500"
      "td3 --env Pendulum-v1 --iterations 2000 --learning-starts 500")
echo "| tempo train | OpenBLAS $selected s | OpenBLAS Prescott s | ratio | final mean return ($selected, Prescott) |"
echo "|---|---|---|---|---|"
for r in "${runs[@]}"; do
  declare -A best=() finals=()
  for _ in $(seq "$repeats"); do
    for mode in selected prescott; do
      if [[ $mode == prescott ]]; then core=(env OPENBLAS_CORETYPE=Prescott); else
        core=(env -u OPENBLAS_CORETYPE); fi
      # shellcheck disable=SC2086
      log=$("${core[@]}" "$tempo" train $r | tail -2)
      secs=$(awk '/^compile time:/ { gsub(/,/, ""); print $3 + $7 }' <<<"$log")
      faster=$(awk -v a="$secs" -v b="${best[$mode]:-1e30}" 'BEGIN { print (a < b) }')
      [[ $faster == 1 ]] && best[$mode]=$secs
      finals[$mode]=$(awk '/^final mean return:/ { print $4 }' <<<"$log")
    done
  done
  ratio=$(awk -v a="${best[selected]}" -v b="${best[prescott]}" 'BEGIN { printf "%.2f", a / b }')
  echo "| $r | ${best[selected]} | ${best[prescott]} | $ratio |" \
    "${finals[selected]}, ${finals[prescott]} |"
  unset best finals
done
