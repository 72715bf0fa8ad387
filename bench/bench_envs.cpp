// Environment steps per second (items_per_second) of the batched environments at 16 and 512
// envs, through step_into (buffers reused, as a training loop would do); also at 1 env, and the
// MuJoCo locomotion ones at 1 and 16, the counts bench/rl_peers.py compares with EnvPool.
#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "rl/envs/env.h"

namespace {

using tempo::rl::EnvOptions;

void run_env(benchmark::State& state, const std::string& name, EnvOptions opts) {
  const int64_t n = state.range(0);
  std::unique_ptr<tempo::rl::BatchedEnv> env;
  try {
    env = tempo::rl::make_env(name, n, opts);
  } catch (const std::exception& e) {  // e.g. a build without MuJoCo
    state.SkipWithError(e.what());
    return;
  }
  env->reset(0);
  const tempo::rl::Space& as = env->action_space();
  // A fixed cycle of valid actions.
  std::vector<std::vector<float>> actions(8, std::vector<float>(n * env->action_numel()));
  for (size_t c = 0; c < actions.size(); ++c) {
    for (size_t i = 0; i < actions[c].size(); ++i) {
      const int64_t k = static_cast<int64_t>((c * 31 + i * 17) % 97);
      actions[c][i] = as.discrete ? static_cast<float>(k % as.n) : static_cast<float>(k) / 24 - 2;
    }
  }
  tempo::rl::StepResult out;
  size_t c = 0;
  for (auto _ : state) {
    env->step_into(actions[c], out);
    benchmark::DoNotOptimize(out.obs.data());
    c = (c + 1) % actions.size();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_CartPole(benchmark::State& s) {
  run_env(s, "CartPole-v1", {});
}
void BM_Pendulum(benchmark::State& s) {
  run_env(s, "Pendulum-v1", {});
}
void BM_Acrobot(benchmark::State& s) {
  run_env(s, "Acrobot-v1", {});
}
void BM_MountainCar(benchmark::State& s) {
  run_env(s, "MountainCar-v0", {});
}
void BM_HalfCheetah(benchmark::State& s) {
  run_env(s, "HalfCheetah-v5", {});
}
void BM_Hopper(benchmark::State& s) {
  run_env(s, "Hopper-v5", {});
}
void BM_Synthetic_3x4x4(benchmark::State& s) {
  run_env(s, "synthetic", {{3, 4, 4}, 250, 4});
}
void BM_Synthetic_3x64x64(benchmark::State& s) {
  run_env(s, "synthetic", {{3, 64, 64}, 250, 4});
}
void BM_Synthetic_3x256x256(benchmark::State& s) {
  run_env(s, "synthetic", {{3, 256, 256}, 250, 4});
}

BENCHMARK(BM_CartPole)->Arg(1)->Arg(16)->Arg(512);
BENCHMARK(BM_Pendulum)->Arg(1)->Arg(16)->Arg(512);
BENCHMARK(BM_HalfCheetah)->Arg(1)->Arg(16);
BENCHMARK(BM_Hopper)->Arg(1)->Arg(16);
BENCHMARK(BM_Acrobot)->Arg(16)->Arg(512);
BENCHMARK(BM_MountainCar)->Arg(16)->Arg(512);
BENCHMARK(BM_Synthetic_3x4x4)->Arg(16)->Arg(512);
BENCHMARK(BM_Synthetic_3x64x64)->Arg(16)->Arg(512);
// 512 envs of 3x256x256 would need ~0.8 GB of observation buffers; 16 shows the per-pixel cost.
BENCHMARK(BM_Synthetic_3x256x256)->Arg(16);

}  // namespace

BENCHMARK_MAIN();
