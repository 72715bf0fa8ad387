#!/usr/bin/env bash
# The learned loop schedule of Tempo's generated loops (loops/schedule_model.h): runs RL programs
# with measured loop schedules, which time both orders of every loop over narrow rows at each
# size it runs at, collects those timings (TEMPO_LOOP_TIMINGS), trains the cost model on one set
# of programs and scores it on held-out ones: the programs of bench/README's "Learned rewrites,
# loop schedules and placement on Tempo programs" table, which the model never sees.
#
#   bash bench/loop_schedules.sh [BUILD] [--out FILE] [--timings DIR]   # ~2 minutes on 2 cores
#   bash bench/loop_schedules.sh [BUILD] --compare N [--model FILE]
#
# --compare runs the held-out programs N times each with loop schedules rows, measured and
# learned:FILE (default: the shipped model), alternating, each with an empty kernel and schedule
# cache, and prints their compile and run seconds (`tempo train`'s own figures).
#
# --timings DIR keeps the timings there, one CSV file per set and algorithm (train.ppo.csv, ...),
# for `tempo loops schedules --data` with other splits. The model it writes (default
# data/loop_schedules.safetensors, the one shipped) is what `tempo train --loop-schedules
# learned:FILE` and Python's loop_schedules="learned:FILE" read.
set -euo pipefail
build=build
out=data/loop_schedules.safetensors
compare=0
timings=
while [ $# -gt 0 ]; do
  case "$1" in
    --out | --model) out=$2; shift 2 ;;
    --compare) compare=$2; shift 2 ;;
    --timings) timings=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
work=$(mktemp -d /tmp/tempo-loop-schedules.XXXXXX)
trap 'rm -rf "$work"' EXIT
timings=${timings:-$work}
mkdir -p "$timings"
rm -f "$timings"/train.*.csv "$timings"/test.*.csv

if [ "$compare" -gt 0 ]; then
  programs=("ppo --env CartPole-v1"  # the main job
            "ppo --env CartPole-v1 --num-envs 512 --iterations 10"
            "sac --env Pendulum-v1 --iterations 3000 --learning-starts 1000")
  echo "| program | loop schedules | compile s | run s |"
  echo "|---|---|---:|---:|"
  for program in "${programs[@]}"; do
    for _ in $(seq "$compare"); do
      for schedules in rows measured "learned:$out"; do
        rm -rf "$work/cache"
        # shellcheck disable=SC2086
        line=$(TEMPO_CACHE_DIR=$work/cache "$build/tempo" train $program --seed 1 \
          --loop-schedules "$schedules" | grep "^compile time")
        compile=$(echo "$line" | sed -E 's/compile time: ([0-9.]+) s.*/\1/')
        run=$(echo "$line" | sed -E 's/.*run time: ([0-9.]+) s.*/\1/')
        echo "| $program | ${schedules%%:*} | $compile | $run |"
      done
    done
  done
  exit 0
fi

# Appends the loop timings of `tempo train ALGORITHM ARGS` to $timings/SET.ALGORITHM.csv.
run() {
  local set=$1
  shift
  echo "[$set] tempo train $*"
  TEMPO_LOOP_TIMINGS=$timings/$set.$1.csv "$build/tempo" train "$@" --seed 3 > /dev/null
}

# Training programs: the algorithms at other sizes than the held-out ones.
for n in 1 2 8 16 32 64 128 256; do
  run train ppo --env CartPole-v1 --num-envs $n --iterations 2
done
for n in 8 64 256; do
  run train ppo --env Acrobot-v1 --num-envs $n --iterations 2
  run train a2c --env CartPole-v1 --num-envs $n --iterations 5
  run train reinforce --env MountainCar-v0 --num-envs $n --iterations 5
  run train ppo --env Pendulum-v1 --num-envs $n --iterations 2
done
for b in 32 64 128 512 1024; do
  run train sac --env Pendulum-v1 --iterations 150 --learning-starts 100 --batch-size $b
  run train td3 --env MountainCarContinuous-v0 --iterations 150 --learning-starts 100 \
    --batch-size $b
  run train dqn --env CartPole-v1 --iterations 150 --learning-starts 100 --batch-size $b
done

# Held out: the table's programs (the main job's PPO, PPO at 512 environments, SAC's defaults)
# and A2C on Acrobot.
run test ppo --env CartPole-v1 --num-envs 4 --iterations 3
run test ppo --env CartPole-v1 --num-envs 512 --iterations 2
run test sac --env Pendulum-v1 --iterations 150 --learning-starts 100
run test a2c --env Acrobot-v1 --num-envs 16 --iterations 5

files() { ls "$timings"/"$1".*.csv | paste -sd, -; }
"$build/tempo" loops schedules --data "$(files train)" --test "$(files test)" --out "$out"
