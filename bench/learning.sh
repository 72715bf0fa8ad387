#!/usr/bin/env bash
# Learning benchmark: trains with `tempo train` for each algorithm and seed on CartPole-v1 and
# reports when the mean return (last 20 episodes) first reaches 475: env steps and seconds of
# training (compile time apart), plus the final mean return.
#
#   bench/learning.sh [BUILD_DIR] [ALGOS] [SEEDS]     e.g. bench/learning.sh build "ppo a2c" "1 2 3"
set -euo pipefail
build=${1:-build}
algos=${2:-"ppo a2c"}
seeds=${3:-"1 2 3"}
tempo="$build/tempo"
[ -x "$tempo" ] || { echo "no $tempo: build the tempo target first" >&2; exit 1; }
echo "| algo | seed | env steps to 475 | seconds to 475 | compile s | final mean return |"
echo "|---|---|---|---|---|---|"
for algo in $algos; do
  for seed in $seeds; do
    log=$(mktemp)
    "$tempo" train "$algo" --env CartPole-v1 --seed "$seed" > "$log"
    awk -v algo="$algo" -v seed="$seed" '
      /^iteration/ && !hit {
        for (k = 1; k < NF; k++) {
          if ($k == "env_steps") steps = $(k + 1)
          if ($k == "mean_return") ret = $(k + 1)
          if ($k == "time") secs = $(k + 1)
        }
        if (ret + 0 >= 475) { hit = 1; hs = steps; ht = secs }
      }
      /^compile time:/ { compile = $3 }
      /^final mean return:/ { final = $4 }
      END {
        sub(/s$/, "", ht)
        printf "| %s | %s | %s | %s | %s | %s |\n", algo, seed, hit ? hs : "not reached",
               hit ? ht : "-", compile, final
      }' "$log"
    rm -f "$log"
  done
done
