// Memory at scale (TEMPO §5.2): compiling under a device-memory budget (estimation, tiling,
// swapping to host memory), the same values with and without it, the errors of a budget that
// cannot be met, and the memory timeline.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "driver/compile.h"
#include "e2e/e2e_util.h"
#include "expect_error.h"

namespace tempo {
namespace {

using testing::expect_close;
using testing::expect_user_error;
using testing::source;
using testing::to_torch;

constexpr int64_t kRow = 4096;  // floats per step: 16 KiB

bool passes_on() {
  return std::getenv("TEMPO_NO_PASS") == nullptr;
}

// A rollout read by a learner after the acting loop: o[i, t] from a source, its running mean as
// the acting state, and a learner that reads the rollout only once the acting loop is done:
// either whole, o[i, 0:T] (its mean and sum, which the tiling pass runs in tiles under a budget),
// or point by point in a recurrence backwards in time, tanh(g) / 2 + o[t] * last (nothing
// batches it). The rollout waits in memory across the acting loop: what swapping moves to host.
struct Rollout {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  Dim t = ctx.dim("t", "T");
  RT o, state, learned;
  explicit Rollout(bool whole = true) {
    o = source(ctx, {i, t}, {kRow});
    state = ctx.placeholder({DType::Float32, {kRow}}, {i, t}, "state");
    state[{i.var, 0}] = o[{i.var, 0}];
    state[{i.var, t.var + 1}] = state[{i.var, t.var}] * 0.5 + o;
    RT last = state[{i.var, t.bound - 1}];
    if (whole) {
      RT rollout = o[{i.var, slice(0, t.bound)}];  // (T, kRow)
      learned = (rollout.mean(0) * last + rollout.sum(0)).named("learned").retain();
    } else {
      // g[s] holds the step T - 1 - s (the recurrence runs backwards in time).
      RT g = ctx.placeholder({DType::Float32, {kRow}}, {i, t}, "g");
      g[{i.var, 0}] = o[{i.var, t.bound - 1}] * last;
      // (the right side is built at every t; its read is clamped where no branch takes it)
      RT earlier = o[{i.var, max(0, t.bound - 2 - t.var)}];
      g[{i.var, t.var + 1}] = g[{i.var, t.var}].tanh() * 0.5 + earlier * last;
      learned = g[{i.var, t.bound - 1}].named("learned").retain();
    }
  }
  Executable build(int64_t budget, int64_t steps = 32, const std::string& timeline = "") {
    CompileOptions co;
    co.memory_budget = budget;
    co.memory_timeline = timeline;
    return compile(ctx, {{i.bound, 3}, {t.bound, steps}}, co);
  }
};

void expect_swapping_keeps_values(bool whole) {
  Rollout a(whole), b(whole);
  Executable unbounded = a.build(0);
  unbounded.run();
  const int64_t rollout_bytes = 32 * kRow * 4;
  EXPECT_GE(unbounded.memory().peak_bytes, rollout_bytes);
  EXPECT_EQ(unbounded.memory().host_peak_bytes, 0);

  const int64_t budget = rollout_bytes / 2;
  Executable swapped = b.build(budget);
  const std::string schedule = swapped.schedule_str();
  EXPECT_NE(schedule.find("evict"), std::string::npos) << schedule;
  EXPECT_NE(schedule.find("load"), std::string::npos) << schedule;
  swapped.run();
  EXPECT_LE(swapped.memory().peak_bytes, budget);
  EXPECT_GT(swapped.memory().host_peak_bytes, rollout_bytes / 2);
  for (int64_t k = 0; k < 3; ++k)
    expect_close(to_torch(swapped.get(b.learned, {k})), to_torch(unbounded.get(a.learned, {k})),
                 "learned[" + std::to_string(k) + "]", 1e-5);
}

// Each point loaded back just before the step of the learner that reads it.
TEST(MemoryBudget, SwappingKeepsValuesAndStaysUnderTheBudget) {
  expect_swapping_keeps_values(false);
}

// The whole rollout read at once: tiled (a quarter of the budget per window), each tile loaded
// back just before the tile that reads it.
TEST(MemoryBudget, TilingAndSwappingKeepValuesAndStayUnderTheBudget) {
  if (!passes_on()) GTEST_SKIP() << "needs the tiling pass";
  expect_swapping_keeps_values(true);
}

// PPO's minibatches: updates u over (i, u) gather random rows of the flattened rollout
// o[i, 0:T]. Under a budget below the rollout, the rollout is swapped and read where it is in host
// memory (nothing is loaded back): the flattening view stays there too, and only each update's
// rows move to the device.
struct Minibatches {
  static constexpr int64_t kEnvs = 4, kObs = 1024, kRows = 8, kUpdates = 4;
  Context ctx;
  Dim i = ctx.dim("i", "I");
  Dim t = ctx.dim("t", "T");
  Dim u = ctx.dim("u", "U");
  RT learned;
  Minibatches() {
    RT o = source(ctx, {i, t}, {kEnvs, kObs});
    auto pick = [](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
      HostTensor idx(DType::Int64, {kRows});
      for (int64_t k = 0; k < kRows; ++k)
        idx.set(k, static_cast<double>((p[0] * 7 + p[1] * 13 + k * 29) % 64));
      return std::vector<HostTensor>{idx};
    };
    RT idx = ctx.udf("pick", pick, {}, {TensorType{DType::Int64, {kRows}}}, {i, u})[0];
    RT flat = o[{i.var, slice(0, t.bound)}].reshape(Shape({t.bound * kEnvs, Expr(kObs)}));
    // A recurrence over u (PPO's parameters), so that the updates run one after the other.
    RT s = ctx.placeholder({DType::Float32, {kObs}}, {i, u}, "s");
    learned = (flat.index_select(0, idx) * s).tanh().sum(0).named("learned").retain();
    s[{i.var, 0}] = ctx.ones({kObs});
    s[{i.var, u.var + 1}] = learned * 0.5;
  }
  Executable build(int64_t budget) {
    CompileOptions co;
    co.memory_budget = budget;
    return compile(ctx, {{i.bound, 2}, {t.bound, 16}, {u.bound, kUpdates}}, co);
  }
};

TEST(MemoryBudget, GathersReadASwappedRolloutInHostMemory) {
  Minibatches a, b;
  Executable unbounded = a.build(0);
  unbounded.run();
  const int64_t rollout = 16 * Minibatches::kEnvs * Minibatches::kObs * 4;  // 256 KiB
  EXPECT_GE(unbounded.memory().peak_bytes, rollout);
  const int64_t budget = rollout * 3 / 4;
  Executable swapped = b.build(budget);
  const std::string schedule = swapped.schedule_str();
  EXPECT_NE(schedule.find("evict"), std::string::npos) << schedule;
  EXPECT_EQ(schedule.find("load"), std::string::npos) << schedule;
  swapped.run();
  // A minibatch (8 rows of 4 KiB) and what the update computes from it.
  EXPECT_LE(swapped.memory().peak_bytes, budget);
  EXPECT_GE(swapped.memory().host_peak_bytes, rollout);
  for (int64_t k = 0; k < 2; ++k)
    for (int64_t v = 0; v < Minibatches::kUpdates; ++v)
      expect_close(to_torch(swapped.get(b.learned, {k, v})),
                   to_torch(unbounded.get(a.learned, {k, v})),
                   "learned[" + std::to_string(k) + ", " + std::to_string(v) + "]", 1e-6);
}

TEST(MemoryBudget, UnderTheBudgetNothingChanges) {
  Rollout a;
  Executable exe = a.build(int64_t{1} << 30);
  EXPECT_EQ(exe.schedule_str().find("evict"), std::string::npos);
  exe.run();
  EXPECT_EQ(exe.memory().host_peak_bytes, 0);
}

TEST(MemoryBudget, ABudgetNoScheduleMeetsNamesTheLargestStores) {
  // The acting state alone (one row per step, read at the next step) needs more than 1 KiB.
  Rollout a;
  expect_user_error([&] { a.build(1024); }, {"memory budget 0.0 MiB", "needs about",
                                               "largest stores at the peak", "memory_test.cpp"});
}

TEST(MemoryBudget, TheSwapPolicyDecides) {
  Rollout a(false);
  CompileOptions co;
  co.memory_budget = 32 * kRow * 4 / 2;
  std::vector<std::string> seen;
  co.swap_policy = [&](const std::vector<SwapCandidate>& candidates, int64_t excess) {
    EXPECT_GT(excess, 0);
    for (const SwapCandidate& c : candidates) seen.push_back(c.rt);
    return std::vector<size_t>{};  // swap nothing
  };
  expect_user_error(
      [&] {
        compile(a.ctx, {{a.i.bound, 3}, {a.t.bound, 32}}, co);
      },
      {"the swap policy chose nothing"});
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen[0].find("memory_test.cpp"), std::string::npos) << seen[0];
  co.swap_policy = [](const std::vector<SwapCandidate>& c, int64_t) {
    return std::vector<size_t>{c.size()};
  };
  expect_user_error(
      [&] {
        compile(a.ctx, {{a.i.bound, 3}, {a.t.bound, 32}}, co);
      },
      {"swap policy: index"});
}

// Recomputation (passes/recompute.h): the activation act = tanh(s) feeds the recurrence at each
// step and a learner that reads the states and the activations of the whole loop after it. With
// recomputation the learner computes tanh over the states it keeps anyway, so the activations are
// freed at their own step: about one rollout less at the peak, the same values. Under a budget
// that this meets, compile recomputes instead of swapping anything.
struct Recurrent {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT learned;
  Recurrent() {
    RT o = source(ctx, {t}, {kRow});
    RT s = ctx.placeholder({DType::Float32, {kRow}}, {t}, "s");
    RT act = s.tanh().named("act");
    s[0] = o[0];
    s[t.var + 1] = act * 0.5 + o;
    learned = (s[slice(0, t.bound)] * act[slice(0, t.bound)]).sum(0).named("learned").retain();
  }
};

TEST(MemoryBudget, RecomputesCheapActivationsInsteadOfKeepingThem) {
  if (!passes_on()) GTEST_SKIP() << "compares recomputation on and off itself";
  const int64_t steps = 32, rollout = steps * kRow * 4;
  std::vector<Recurrent> programs(3);
  std::vector<Executable> exes;
  auto run = [&](int k, CompileOptions co) {
    exes.push_back(compile(programs[k].ctx, {{programs[k].t.bound, steps}}, co));
    exes.back().run();
    return exes.back().memory();
  };
  CompileOptions kept, recomputed;
  recomputed.passes.recompute = true;
  const int64_t kept_peak = run(0, kept).peak_bytes;
  const int64_t recomputed_peak = run(1, recomputed).peak_bytes;
  std::cout << "peak kept " << kept_peak << " B, recomputed " << recomputed_peak << " B\n";
  EXPECT_GE(kept_peak, 2 * rollout);
  EXPECT_LE(recomputed_peak, kept_peak - rollout * 3 / 4);
  // A budget that recomputation meets and keeping does not: nothing is swapped.
  CompileOptions budget;
  budget.memory_budget = (kept_peak + recomputed_peak) / 2;
  const MemoryStats fit = run(2, budget);
  EXPECT_LE(fit.peak_bytes, budget.memory_budget);
  EXPECT_EQ(fit.host_peak_bytes, 0);
  EXPECT_EQ(exes[2].schedule_str().find("evict"), std::string::npos) << exes[2].schedule_str();
  for (int k = 1; k < 3; ++k)
    expect_close(to_torch(exes[k].get(programs[k].learned, {})),
                 to_torch(exes[0].get(programs[0].learned, {})), "learned", 1e-5);
}

TEST(MemoryBudget, ParsesSizes) {
  EXPECT_EQ(parse_bytes("512MiB", "--memory-budget"), int64_t{512} << 20);
  EXPECT_EQ(parse_bytes("1.5 GiB", "x"), int64_t{3} << 29);
  EXPECT_EQ(parse_bytes("800MB", "x"), 800'000'000);
  EXPECT_EQ(parse_bytes("4096", "x"), 4096);
  EXPECT_EQ(parse_bytes("64k", "x"), 65536);
  for (const char* bad : {"", "lots", "12 parsecs", "-5MiB", "0", "1e30GiB"})
    expect_user_error([&] { parse_bytes(bad, "--memory-budget"); },
                      {"--memory-budget", "expected a size"});
  Rollout a;
  CompileOptions co;
  co.memory_budget = -1;
  expect_user_error(
      [&] {
        compile(a.ctx, {{a.i.bound, 3}, {a.t.bound, 8}}, co);
      },
      {"memory_budget must be positive"});
}

TEST(MemoryTimeline, WritesTheCurveOfEveryStatement) {
  namespace fs = std::filesystem;
  // A folder of this process's own: the suite runs this test twice (passes on and off), and the
  // two runs may overlap.
  const fs::path dir =
      fs::temp_directory_path() / ("tempo_memory_timeline_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string csv = (dir / "timeline.csv").string();
  Rollout a(false);
  Executable exe = a.build(32 * kRow * 4 / 2, 16, csv);
  exe.run();
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "step,statement,op,device_bytes,host_bytes");
  int64_t rows = 0, max_device = 0, max_host = 0;
  bool evicts = false;
  while (std::getline(in, line)) {
    ++rows;
    std::stringstream fields(line);
    std::string step, stmt, op, device, host;
    std::getline(fields, step, ',');
    std::getline(fields, stmt, ',');
    std::getline(fields, op, ',');
    std::getline(fields, device, ',');
    std::getline(fields, host, ',');
    evicts |= stmt == "evict";
    max_device = std::max<int64_t>(max_device, std::stoll(device));
    max_host = std::max<int64_t>(max_host, std::stoll(host));
  }
  EXPECT_GT(rows, 3 * 16);
  EXPECT_TRUE(evicts);
  EXPECT_EQ(max_device, exe.memory().peak_bytes);
  EXPECT_EQ(max_host, exe.memory().host_peak_bytes);
  EXPECT_TRUE(fs::exists(dir / "timeline.svg"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tempo
