// What the compiler's passes (src/passes/) buy, measured by switching them off: the same
// programs run in one process with the pipeline on, with each pass off in turn, and with every
// pass off.
//
//   bench_passes [--quick]
//
// 1. A per-timestep program, z[t] = tanh(x[t] @ W + b).sum(): launches per timestep and run time.
// 2. y[t] = x[t:T].sum(0): run time at T = 200 and T = 1600 (quadratic without lifting).
// 3. The RL training programs (REINFORCE Monte-Carlo, n-step and per-step, A2C, PPO) on
//    CartPole-v1 and on synthetic 3x64x64 observations: launches per iteration, median seconds
//    per iteration, tracked peak memory and compile time, per configuration of the pipeline.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"
#include "rl/algorithms/algorithms.h"

namespace {

using namespace tempo;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The pipeline configurations compared: all on, each pass off, all off.
struct Config {
  std::string name;
  PassOptions passes;
};

std::vector<Config> configs(bool quick) {
  std::vector<Config> out{{"all passes", PassOptions{}}};
  for (const PassOptions::Switch& s : PassOptions::switches()) {
    std::string name = s.name;
    if (quick && name != "vectorize" && name != "lifting" && name != "cse") continue;
    if (!(PassOptions{}.*s.on)) continue;  // off by default (recompute): "all passes" already
    PassOptions o;
    o.set(name, false);
    out.push_back({"no " + name, o});
  }
  out.push_back({"no passes", PassOptions::none()});
  return out;
}

// A source of per-timestep values over `domain` (a user function, as an environment would be).
RT source(Context& ctx, const Dims& domain, std::vector<int64_t> shape) {
  auto fn = [shape](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    HostTensor h(DType::Float32, shape);
    for (int64_t k = 0; k < h.numel(); ++k)
      h.set(k, std::sin(0.1 * static_cast<double>(k + p.back())));
    return std::vector<HostTensor>{h};
  };
  return ctx.udf("x", fn, {},
                 {TensorType{DType::Float32, Shape(std::vector<Expr>(shape.begin(), shape.end()))}},
                 domain)[0];
}

struct RunStats {
  double run_s = 0, compile_s = 0;
  int64_t launches = 0;
};

template <typename Build>
RunStats run_program(Build build, int64_t T, const PassOptions& passes) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  build(ctx, t);
  CompileOptions o;
  o.passes = passes;
  auto c0 = Clock::now();
  Executable exe = compile(ctx, {{t.bound, T}}, o);
  RunStats s;
  s.compile_s = seconds_since(c0);
  std::vector<double> times;
  for (int k = 0; k < 3; ++k) {
    auto r0 = Clock::now();
    exe.run();
    times.push_back(seconds_since(r0));
  }
  s.run_s = median(times);
  s.launches = exe.ops_executed();
  return s;
}

// A sink that consumes a per-timestep value (so that it is computed).
void consume(Context& ctx, const RT& y, const Dim& t) {
  ctx.udf("sink", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {y}, {}, {t});
}

void per_timestep_mlp(bool quick) {
  const int64_t T = quick ? 200 : 1000;
  std::cout << "\n## z[t] = tanh(x[t] @ W + b).sum(), T = " << T << "\n\n"
            << "| pipeline | launches per timestep | run ms | compile ms |\n|---|---|---|---|\n";
  for (const Config& c : {configs(true).front(), configs(true).back()}) {
    RunStats s = run_program(
        [](Context& ctx, const Dim& t) {
          RT x = source(ctx, {t}, {16, 32});
          RT W = ctx.rand_normal({32, 64}), b = ctx.rand_normal({64});
          RT z = (x.matmul(W) + b).tanh().sum();
          consume(ctx, z, t);
        },
        T, c.passes);
    std::cout << "| " << c.name << " | " << std::fixed << std::setprecision(2)
              << static_cast<double>(s.launches) / static_cast<double>(T) << " | "
              << std::setprecision(1) << 1e3 * s.run_s << " | " << 1e3 * s.compile_s << " |\n";
  }
}

void future_sum(bool quick) {
  std::cout << "\n## y[t] = x[t:T].sum(0): run time at T = 200 and 1600\n\n"
            << "| pipeline | T = 200 ms | T = 1600 ms | ratio (linear: 8) |\n|---|---|---|---|\n";
  PassOptions no_lifting;
  no_lifting.set("lifting", false);
  for (const Config& c : {Config{"all passes", PassOptions{}}, Config{"no lifting", no_lifting}}) {
    double ms[2];
    int k = 0;
    for (int64_t T : {200, 1600}) {
      RunStats s = run_program(
          [](Context& ctx, const Dim& t) {
            RT x = source(ctx, {t}, {4});
            consume(ctx, x[slice(t.var, t.bound)].sum(0), t);
          },
          T, c.passes);
      ms[k++] = 1e3 * s.run_s;
    }
    std::cout << "| " << c.name << " | " << std::fixed << std::setprecision(1) << ms[0] << " | "
              << ms[1] << " | " << std::setprecision(2) << ms[1] / ms[0] << " |\n";
  }
}

// Causal attention at each decoding step t over k[0:t+1], v[0:t+1] (H heads of width D), the
// window whole or in tiles (TEMPO §4.3): run time and the peak of tracked tensor memory.
void tiled_attention(bool quick) {
  const int64_t T = quick ? 512 : 2048, H = 8, D = 64;
  std::cout << "\n## causal attention over k[0:t+1], T = " << T << ", " << H << " heads x " << D
            << ": windows whole or in tiles\n\n"
            << "| tiles along t | run ms | launches per step | peak tracked MiB |\n"
            << "|---|---|---|---|\n";
  const std::pair<int64_t, bool> runs[] = {{0, false}, {64, false}, {64, true}, {256, false}, {256, true}};
  for (auto [tile, fixed] : runs) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT q = source(ctx, {t}, {H, 1, D}), k = source(ctx, {t}, {H, D}), v = source(ctx, {t}, {H, D});
    Expr w = slice(0, t.var + 1);
    RT scores = q.matmul(k[w].permute({1, 2, 0})) * (1.0 / 8.0);
    consume(ctx, scores.softmax(2).matmul(v[w].permute({1, 0, 2})), t);
    CompileOptions o;
    if (tile) o.passes.tiles = {{"t", tile}};
    o.passes.static_tiles = fixed;
    Executable exe = compile(ctx, {{t.bound, T}}, o);
    std::vector<double> times;
    for (int r = 0; r < 3; ++r) {
      auto r0 = Clock::now();
      exe.run();
      times.push_back(seconds_since(r0));
    }
    std::cout << "| " << (tile ? std::to_string(tile) + (fixed ? " static" : "") : std::string("whole"))
              << " | " << std::fixed
              << std::setprecision(1) << 1e3 * median(times) << " | " << std::setprecision(2)
              << static_cast<double>(exe.ops_executed()) / static_cast<double>(T) << " | "
              << std::setprecision(1) << static_cast<double>(exe.memory().peak_bytes) / (1 << 20)
              << " |\n";
  }
}

struct RlProgram {
  std::string name;
  rl::TrainConfig cfg;
};

std::vector<RlProgram> rl_programs(bool quick) {
  std::vector<RlProgram> out;
  for (std::string env : {"CartPole-v1", "synthetic"}) {
    if (quick && env == "synthetic") continue;
    auto make = [&](const std::string& algo) {
      rl::TrainConfig c = rl::TrainConfig::defaults(algo);
      c.env = env;
      c.env_options.obs_shape = {3, 64, 64};
      c.num_envs = env == "synthetic" ? 16 : c.num_envs;
      c.iterations = quick ? 6 : (env == "synthetic" ? 6 : 12);
      return c;
    };
    rl::TrainConfig mc = make("reinforce"), nstep = make("reinforce"), per_step = make("reinforce");
    nstep.n_step = 8;
    per_step.per_step = true;
    out.push_back({"REINFORCE MC, " + env, mc});
    out.push_back({"REINFORCE n-step 8, " + env, nstep});
    if (!quick) out.push_back({"REINFORCE per-step, " + env, per_step});
    out.push_back({"A2C, " + env, make("a2c")});
    out.push_back({"PPO, " + env, make("ppo")});
  }
  return out;
}

void rl_programs_table(bool quick) {
  std::cout << "\n## RL training programs\n\n"
            << "| program | pipeline | launches/iter | s/iter | peak MiB | compile s |\n"
            << "|---|---|---|---|---|---|\n";
  for (const RlProgram& p : rl_programs(quick))
    for (const Config& c : configs(quick)) {
      rl::TrainConfig cfg = p.cfg;
      cfg.compile.passes = c.passes;
      rl::TrainResult r = rl::train(cfg, nullptr);
      std::vector<double> steady(
          r.iteration_seconds.begin() + std::min<size_t>(1, r.iteration_seconds.size()),
          r.iteration_seconds.end());
      std::cout << "| " << p.name << " | " << c.name << " | " << r.launches / cfg.iterations
                << " | " << std::fixed << std::setprecision(4) << median(steady) << " | "
                << std::setprecision(1) << static_cast<double>(r.peak_tracked_bytes) / (1 << 20)
                << " | " << std::setprecision(2) << r.compile_seconds << " |" << std::endl;
    }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("TEMPO_NO_SCHEDULE_CACHE", "1", 1);  // compile times include scheduling
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 1 && !quick) {
    std::cerr << "usage: bench_passes [--quick]\n";
    return 2;
  }
  std::cout << "# bench_passes" << (quick ? " --quick" : "") << "\n";
  per_timestep_mlp(quick);
  future_sum(quick);
  tiled_attention(quick);
  rl_programs_table(quick);
}
