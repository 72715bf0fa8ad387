#!/usr/bin/env bash
# Sets up, builds `tempo`, and trains a policy on CartPole-v1, writing out/curve.csv and
# out/curve.svg (a few minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target tempo
./build/tempo train a2c --env CartPole-v1 --seed 1 --iterations 150 --num-envs 8 --steps 64 \
  --out out/
