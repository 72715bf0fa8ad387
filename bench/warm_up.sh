#!/usr/bin/env bash
# The off-policy warm-up (TrainConfig::warm_up): SAC and TD3 trained with the steps before
# learning starts run as an acting-only program, and again as one program that computes and
# discards the updates there (--no-warm-up), alternated, one thread each. Prints each run's
# compile and run seconds, the final mean return (the same in both: the runs are equal bit for
# bit) and the ratio of the wall times.
#
#   bench/warm_up.sh [BUILD_DIR] [REPEATS]
set -euo pipefail
build=${1:-build}
repeats=${2:-2}
tempo="$build/tempo"
[ -x "$tempo" ] || { echo "no $tempo: build the tempo target first" >&2; exit 1; }
export OMP_NUM_THREADS=1
# algo, env, iterations, learning-starts in env steps: a quarter of the run, as in their
# defaults (5k of 20k)
runs=("sac Pendulum-v1 4000 1000" "td3 Pendulum-v1 4000 1000")
echo "| algo | env | env steps | learning from | warm-up s (compile + run) | one program s | warm-up / one program | final mean return |"
echo "|---|---|---|---|---|---|---|---|"
for r in "${runs[@]}"; do
  read -r algo env iterations starts <<<"$r"
  declare -A best=() finals=()
  for _ in $(seq "$repeats"); do
    for mode in warm single; do
      flags=()
      [[ $mode == single ]] && flags=(--no-warm-up)
      log=$("$tempo" train "$algo" --env "$env" --iterations "$iterations" \
        --learning-starts "$starts" "${flags[@]}" | tail -2)
      secs=$(awk '/^compile time:/ { gsub(/,/, ""); print $3 + $7 }' <<<"$log")
      final=$(awk '/^final mean return:/ { print $4 }' <<<"$log")
      if [[ -z ${best[$mode]:-} ]] || awk -v a="$secs" -v b="${best[$mode]}" 'BEGIN { exit !(a < b) }'; then
        best[$mode]=$secs
      fi
      finals[$mode]=$final
    done
  done
  steps=$iterations  # one env step an iteration
  ratio=$(awk -v a="${best[warm]}" -v b="${best[single]}" 'BEGIN { printf "%.2f", a / b }')
  echo "| $algo | $env | $steps | $starts | ${best[warm]} | ${best[single]} | $ratio | ${finals[warm]} (one program: ${finals[single]}) |"
  unset best finals
done
