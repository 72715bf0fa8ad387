// Dataflow fusion and the generated loops of its regions: the same programs with fusion and code
// generation on and off, against each other and against LibTorch eager references.
#include "driver/compile.h"
#include "passes/fusion.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <set>
#include <tuple>

#include "api/tempo.h"
#include "backend/cpu_allocator.h"
#include "backend/kernel_cache.h"
#include "e2e/e2e_util.h"
#include "passes/pass_test_util.h"

namespace tempo {
namespace {

using testing::eager_source;
using testing::expect_close;
using testing::source;
using testing::to_torch;

struct Result {
  std::vector<torch::Tensor> values;
  int64_t launches = 0;
  int fused_ops = 0;
  int64_t allocations = 0;  // tensors the run allocated (the caching allocator counts them)
  int64_t peak_bytes = 0;   // the tensor stores' tracked peak
};

// Switches for one run: fusion, code generation and buffer donation; the device (empty: the
// default one).
struct Mode {
  bool fusion = true;
  bool codegen = true;
  bool donation = true;
  std::string device;
  backend::LoopSchedules loops = backend::LoopSchedules::Measured;
  backend::LoopSchedulePolicy policy;  // with LoopSchedules::Policy
};

// Counts the Fused ops a program compiles to.
int fused_ops(const Context& ctx, const PassOptions& options) {
  passes::Program p(ctx.graph(), ctx.retained());
  passes::run_pipeline(p, options);
  int n = 0;
  for (const ir::OpNode& op : p.graph.ops()) n += op.kind == ir::OpKind::Fused;
  return n;
}

// Compiles and runs the program `build` makes; the values of its outputs at `points`.
template <typename Build>
Result run(const Mode& m, Build build, const Bounds& bounds,
           const std::vector<std::vector<int64_t>>& points) {
  Context ctx;
  std::vector<RT> outs = build(ctx);
  CompileOptions o;
  o.passes.fusion = m.fusion;
  o.passes.vectorize = false;  // keep per-timestep ops, the dispatch-bound case
  o.passes.check_ir = true;
  o.codegen = m.codegen;
  o.donation = m.donation;
  o.device = m.device;
  o.loop_schedules = m.loops;
  o.loop_schedule_policy = m.policy;
  Executable exe = compile(ctx, bounds, o);
  const int64_t before = backend::cpu_allocator_stats().allocations;
  exe.run();
  Result r;
  r.allocations = backend::cpu_allocator_stats().allocations - before;
  r.peak_bytes = exe.memory().peak_bytes;
  for (const RT& y : outs)
    for (const auto& p : points) r.values.push_back(to_torch(exe.get(y, p)));
  r.launches = exe.ops_executed();
  r.fused_ops = fused_ops(ctx, o.passes);
  return r;
}

// A per-timestep MLP layer with an elementwise epilogue and a recurrence through it:
// h[t+1] = tanh(h[t] @ W + x[t] * 0.5 + b) * 0.9 + 0.1 * sigmoid(x[t]), h[0] = x[0].
std::vector<RT> recurrent_layer(Context& ctx) {
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {4, 3});
  RT W = ctx.constant(0.3, {3, 3});
  RT b = ctx.constant(0.1, {3});
  RT h = ctx.placeholder({DType::Float32, {4, 3}}, {t}, "h");
  h[0] = x[0];
  RT pre = h[t.var].matmul(W) + x * 0.5 + b;
  h[t.var + 1] = pre.tanh() * 0.9 + x.sigmoid() * 0.1;
  RT y = (h * h - 1.0).relu().retain();
  return {y};
}

torch::Tensor eager_recurrent_layer(int64_t at) {
  torch::Tensor W = torch::full({3, 3}, 0.3), b = torch::full({3}, 0.1);
  torch::Tensor h = eager_source({0}, {4, 3});
  for (int64_t t = 0; t < at; ++t) {
    torch::Tensor x = eager_source({t}, {4, 3});
    h = (h.matmul(W) + x * 0.5 + b).tanh() * 0.9 + x.sigmoid() * 0.1;
  }
  return (h * h - 1.0).relu();
}

TEST(Fusion, RecurrentLayerMatchesEagerWithFusionAndCodegenOnAndOff) {
  const Bounds bounds = {{Expr::bound("T"), 6}};
  std::vector<std::vector<int64_t>> points = {{0}, {3}, {5}};
  Result off = run({false, false}, recurrent_layer, bounds, points);
  Result fused = run({true, false}, recurrent_layer, bounds, points);
  Result generated = run({true, true}, recurrent_layer, bounds, points);
  EXPECT_EQ(off.fused_ops, 0);
  EXPECT_GE(fused.fused_ops, 1);
  EXPECT_LT(fused.launches, off.launches);
  for (size_t k = 0; k < points.size(); ++k) {
    torch::Tensor want = eager_recurrent_layer(points[k][0]);
    expect_close(off.values[k], want, "fusion off");
    expect_close(fused.values[k], want, "fusion on");
    expect_close(generated.values[k], want, "fusion and codegen on");
  }
}

// Buffer donation: a generated loop writes into the buffer of a dead input (the matmul's output
// in each step of the recurrent layer): the same values, bit for bit, and fewer allocations.
TEST(Fusion, DonatedBuffersGiveTheSameValues) {
  if (std::getenv("TEMPO_NO_DONATION") || std::getenv("TEMPO_NO_CODEGEN"))
    GTEST_SKIP() << "donation or code generation is switched off";
  const Bounds bounds = {{Expr::bound("T"), 6}};
  std::vector<std::vector<int64_t>> points = {{0}, {3}, {5}};
  // On the CPU, whose caching allocator counts the allocations.
  Result kept = run({true, true, false, "cpu"}, recurrent_layer, bounds, points);
  Result donated = run({true, true, true, "cpu"}, recurrent_layer, bounds, points);
  for (size_t k = 0; k < points.size(); ++k)
    EXPECT_TRUE(torch::equal(kept.values[k], donated.values[k])) << "point " << points[k][0];
  if (backend::cpu_allocator_stats().installed) EXPECT_LT(donated.allocations, kept.allocations);
}

// State updated in place (TEMPO §5.2): w[i + 1] = 0.9 w[i] + 0.1 tanh(w[i] + x[i]), with w[i]
// also read by a reduction. The update runs last among w[i]'s readers, takes w[i] over from its
// store and writes w[i + 1] into its buffer: the same values, one state buffer fewer at the peak.
TEST(Fusion, StateUpdatesInPlace) {
  if (std::getenv("TEMPO_NO_DONATION") || std::getenv("TEMPO_NO_CODEGEN"))
    GTEST_SKIP() << "donation or code generation is switched off";
  auto build = [](Context& ctx) {
    Dim i = ctx.dim("i", "I");
    RT x = source(ctx, {i}, {64, 64});
    RT w = ctx.placeholder({DType::Float32, {64, 64}}, {i}, "w");
    w[0] = ctx.constant(1.0, {64, 64});
    w[i.var + 1] = w[i.var] * 0.9 + (w[i.var] + x).tanh() * 0.1;
    return std::vector<RT>{w.sum().retain()};
  };
  const Bounds bounds = {{Expr::bound("I"), 5}};
  std::vector<std::vector<int64_t>> points = {{0}, {2}, {4}};
  Result kept = run({true, true, false}, build, bounds, points);
  Result donated = run({true, true, true}, build, bounds, points);
  torch::Tensor w = torch::ones({64, 64});
  for (int64_t it = 0, k = 0; it < 5; ++it) {
    if (it == points[k][0]) {
      expect_close(kept.values[k], w.sum(), "kept");
      EXPECT_TRUE(torch::equal(kept.values[k], donated.values[k])) << "iteration " << it;
      ++k;
    }
    w = w * 0.9 + (w + eager_source({it}, {64, 64})).tanh() * 0.1;
  }
  EXPECT_LE(donated.peak_bytes, kept.peak_bytes - 64 * 64 * 4);
}

// The RL pattern: a value computed from the whole rollout x[0:T] (a learner) feeds the next
// per-step op of the same iteration. Fusing the per-step ops before and after it into one region
// would make the region wait on itself; fusion must leave them apart and the program schedulable.
TEST(Fusion, RegionsNeverWaitOnThemselves) {
  auto build = [](Context& ctx) {
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = source(ctx, {i, t}, {3});
    RT a = x.exp() * 2.0;                                    // per step
    RT mean = a[{i.var, slice(0, t.bound)}].sum({0}) / 4.0;  // over the rollout
    RT y = ((a + mean).tanh() - a * 0.5).retain();           // per step again
    return std::vector<RT>{y};
  };
  const Bounds bounds = {{Expr::bound("I"), 2}, {Expr::bound("T"), 4}};
  std::vector<std::vector<int64_t>> points = {{0, 0}, {1, 3}};
  Result off = run({false, false}, build, bounds, points);
  Result on = run({true, true}, build, bounds, points);
  for (size_t k = 0; k < points.size(); ++k) {
    const int64_t it = points[k][0];
    torch::Tensor mean = torch::zeros({3});
    for (int64_t s = 0; s < 4; ++s) mean = mean + eager_source({it, s}, {3}).exp() * 2.0;
    mean = mean / 4.0;
    torch::Tensor a = eager_source(points[k], {3}).exp() * 2.0;
    torch::Tensor want = (a + mean).tanh() - a * 0.5;
    expect_close(off.values[k], want, "off");
    expect_close(on.values[k], want, "on");
  }
}

// A weight's transpose read by a recurrence at each step and by a learner over the whole rollout:
// fused into the learner's region, every step would wait for the rollout that the steps make.
// Fusion keeps it apart; the program schedules and computes the eager values.
TEST(Fusion, StepReadersDoNotWaitForAWholeRollout) {
  auto build = [](Context& ctx) {
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT w = ctx.placeholder({DType::Float32, {3, 3}}, {i}, "w");
    RT wt = w.transpose(0, 1);
    // A rollout h that does not need w, and a per-step recurrence y that reads its transpose.
    RT h = ctx.placeholder({DType::Float32, {2, 3}}, {i, t}, "h");
    h[{i.var, Expr(0)}] = ctx.constant(0.5, {2, 3});
    h[{i.var, t.var + 1}] = (h[{i.var, t.var}] * 1.5).tanh();
    RT y = ctx.placeholder({DType::Float32, {2, 3}}, {i, t}, "y");
    y[{i.var, Expr(0)}] = ctx.constant(0.0, {2, 3});
    y[{i.var, t.var + 1}] = (y[{i.var, t.var}].matmul(wt) + h[{i.var, t.var}]).tanh();
    y.retain();
    RT learner = h[{i.var, slice(0, t.bound)}].reshape(Shape({4 * 2, 3})).matmul(wt).sum();
    w[Expr(0)] = source(ctx, {}, {3, 3});
    w[i.var + 1] = w[i.var] * 0.9 + learner * 0.01;  // learning: the next weight
    return std::vector<RT>{learner.retain()};
  };
  {
    Context ctx;
    build(ctx);
    const std::string sdg = testing::after_pass(ctx, [](passes::Program& p) {
      passes::run_pipeline(p, PassOptions{});
      return true;
    });
    EXPECT_NE(sdg.find("= Permute("), std::string::npos) << sdg;  // not inside a region
  }
  const Bounds bounds = {{Expr::bound("I"), 2}, {Expr::bound("T"), 4}};
  std::vector<std::vector<int64_t>> points = {{0}, {1}};
  Result on = run({}, build, bounds, points);
  torch::Tensor w = eager_source({}, {3, 3});
  for (size_t k = 0; k < points.size(); ++k) {
    torch::Tensor wt = w.t();
    torch::Tensor h = torch::full({2, 3}, 0.5), rows = h;
    for (int64_t s = 1; s < 4; ++s) {
      h = (h * 1.5).tanh();
      rows = torch::cat({rows, h});
    }
    torch::Tensor learner = rows.matmul(wt).sum();
    expect_close(on.values[k], learner, "fused");
    w = w * 0.9 + learner * 0.01;
  }
}

// A decoder's pattern: each step appends k[t] to a cache and reads the cache so far, k[0:t + 1],
// and its result feeds the next step. The read of k[0:t + 1] comes back to the step that wrote
// k[t] no earlier than that step, so the ops before the cache and those after it each fuse (two
// regions, the first named after the cache it holds); the values are eager's.
TEST(Fusion, CacheReadersFuseAroundTheCache) {
  auto build = [](Context& ctx) {
    Dim t = ctx.dim("t", "T");
    RT h = ctx.placeholder({DType::Float32, {4}}, {t}, "h");
    h[0] = source(ctx, {}, {4});
    RT a = h[t.var] * 0.5 + 0.1;
    RT k = (a.tanh() * 2.0).named("k_cache");
    RT attended = (k[slice(0, t.var + 1)] * a).mean({0});
    h[t.var + 1] = (attended + a).tanh() * 0.9;
    return std::vector<RT>{h.retain()};
  };
  {
    Context ctx;
    build(ctx);
    passes::Program p(ctx.graph(), ctx.retained());
    passes::run_pipeline(p, PassOptions{});
    std::vector<std::string> regions;
    for (const ir::OpNode& op : p.graph.ops())
      if (op.kind == ir::OpKind::Fused) regions.push_back(op.name);
    EXPECT_NE(std::find(regions.begin(), regions.end(), "k_cache"), regions.end())
        << p.graph.str();
  }
  const Bounds bounds = {{Expr::bound("T"), 5}};
  std::vector<std::vector<int64_t>> points = {{1}, {4}};
  Result off = run({false, false}, build, bounds, points);
  Result on = run({}, build, bounds, points);
  EXPECT_GE(on.fused_ops, 2);
  EXPECT_LT(on.launches, off.launches);
  torch::Tensor h = eager_source({}, {4}), cache;
  for (int64_t s = 0, k = 0; s < 5; ++s) {
    if (s == points[k][0]) {
      expect_close(off.values[k], h, "off");
      expect_close(on.values[k], h, "on");
      ++k;
    }
    torch::Tensor a = h * 0.5 + 0.1;
    torch::Tensor kt = (a.tanh() * 2.0).unsqueeze(0);
    cache = s == 0 ? kt : torch::cat({cache, kt});
    h = ((cache * a).mean({0}) + a).tanh() * 0.9;
    if (k == static_cast<int64_t>(points.size())) break;
  }
}

// Generated loops index broadcast inputs: a bias over rows, a column over columns, and a middle
// broadcast that is materialized first.
TEST(Fusion, GeneratedLoopsBroadcastLikeLibTorch) {
  auto build = [](Context& ctx) {
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {2, 4, 3});
    RT bias = source(ctx, {t}, {3}, 1);
    RT column = source(ctx, {t}, {2, 4, 1}, 2);
    RT middle = source(ctx, {t}, {2, 1, 3}, 3);
    RT y = ((x + bias) * column - middle).maximum(x * 0.0) + 1.0;
    RT z = (y * 2.0 + bias).exp().retain();
    return std::vector<RT>{y.retain(), z};
  };
  const Bounds bounds = {{Expr::bound("T"), 2}};
  std::vector<std::vector<int64_t>> points = {{0}, {1}};
  Result on = run({true, true}, build, bounds, points);
  for (size_t k = 0; k < points.size(); ++k) {
    torch::Tensor x = eager_source(points[k], {2, 4, 3});
    torch::Tensor bias = eager_source(points[k], {3}, 1);
    torch::Tensor column = eager_source(points[k], {2, 4, 1}, 2);
    torch::Tensor middle = eager_source(points[k], {2, 1, 3}, 3);
    torch::Tensor y = torch::maximum((x + bias) * column - middle, x * 0.0) + 1.0;
    expect_close(on.values[k], y, "y");
    expect_close(on.values[points.size() + k], (y * 2.0 + bias).exp(), "z");
  }
}

// A compiler that fails: the program runs on LibTorch kernels, with the same values.
TEST(Fusion, FailedCodeGenerationFallsBackToLibTorch) {
  const Bounds bounds = {{Expr::bound("T"), 5}};
  std::vector<std::vector<int64_t>> points = {{4}};
  Result ok = run({true, true}, recurrent_layer, bounds, points);
  const std::string dir = ::testing::TempDir() + "tempo_failing_cache." + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("TEMPO_CACHE_DIR", dir.c_str(), 1);
  setenv("TEMPO_CXX", "false", 1);
  Result failed = run({true, true}, recurrent_layer, bounds, points);
  unsetenv("TEMPO_CXX");
  unsetenv("TEMPO_CACHE_DIR");
  expect_close(failed.values[0], ok.values[0], "fallback");
}

// The generated sources in kernel cache `dir`, each with the lines (from 1) at which the compiler
// reports a loop vectorized: a loop's own line, or for an `omp simd` loop a line of its body.
struct VectorizedSource {
  std::string path;
  std::vector<std::string> lines;
  std::set<int> reported;
};
std::vector<VectorizedSource> vectorization_reports(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<VectorizedSource> sources;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "kernels")) {
    if (e.path().extension() != ".cpp") continue;
    const std::string report = dir + "/report.txt";
    const std::string command = backend::kernel_compile_command() + " -c -o /dev/null " +
                                e.path().string() + " -fopt-info-vec-optimized 2> " + report;
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    VectorizedSource v{e.path().string(), {}, {}};
    std::ifstream src(e.path()), rep(report);
    for (std::string line; std::getline(src, line);) v.lines.push_back(line);
    for (std::string line; std::getline(rep, line);)
      if (line.find("loop vectorized") != std::string::npos)
        v.reported.insert(std::atoi(line.substr(line.find(".cpp:") + 5).c_str()));
    sources.push_back(std::move(v));
  }
  return sources;
}

// The elementwise loops of clusters with relu, its mask, clamps, sign and where (a relu layer's
// backward pass, PPO's clipped loss) vectorize: the compiler reports every inner loop of the
// generated source vectorized. Branchy forms of these ops once kept such loops scalar.
TEST(Fusion, GeneratedLoopsVectorize) {
  namespace fs = std::filesystem;
  const std::string dir = ::testing::TempDir() + "tempo_vectorize." + std::to_string(getpid());
  fs::remove_all(dir);
  setenv("TEMPO_CACHE_DIR", dir.c_str(), 1);
  auto build = [](Context& ctx) {
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {64, 256});
    RT b = source(ctx, {t}, {256}, 1);
    RT pre = x + b;
    RT mask = (pre > 0.0).cast(DType::Float32);
    RT clip = pre.maximum(-0.2).minimum(0.2);
    RT y = pre.relu() * mask + clip * pre.sign() + where(pre > 0.5, x, clip);
    return std::vector<RT>{y.retain(), mask.retain()};
  };
  run({true, true, true, "cpu"}, build, {{Expr::bound("T"), 2}}, {{1}});  // C++ loops
  unsetenv("TEMPO_CACHE_DIR");
  int loops = 0;
  for (const VectorizedSource& v : vectorization_reports(dir))
    for (size_t n = 0; n < v.lines.size(); ++n)
      if (v.lines[n].find("for (int64_t j = 0; j < cols; ++j)") != std::string::npos) {
        ++loops;
        EXPECT_TRUE(v.reported.count(static_cast<int>(n + 1)))
            << "not vectorized, line " << n + 1 << " of " << v.path;
      }
  EXPECT_GT(loops, 0);
  fs::remove_all(dir);
}

// The bits of a tensor's elements, so that NaNs compare too.
torch::Tensor bits(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return c.element_size() == 4 ? c.view(torch::kInt32) : c.view(torch::kInt64);
}

// Narrow rows (a policy's two logits per environment, a value per row): the interchanged loops
// (backend::LoopOrder::ColumnsOuter) give the values of the rows-outer loops bit for bit, NaN
// and first maxima included, over four whole blocks of rows and a partial one; their passes over
// the columns vectorize across rows.
TEST(Fusion, InterchangedLoopsGiveTheSameValues) {
  if (std::getenv("TEMPO_NO_CODEGEN") || std::getenv("TEMPO_LOOP_SCHEDULES"))
    GTEST_SKIP() << "code generation or its loop order is set from the environment";
  namespace fs = std::filesystem;
  auto build = [](Context& ctx) {
    Dim t = ctx.dim("t", "T");
    RT x = (source(ctx, {t}, {300, 2}) * 3.0).floor().clamp(-1.0, 1.0);  // -1, 0 or 1: ties
    RT logits = (x + 0.5).log();  // NaN where x is -1
    RT v = source(ctx, {t}, {300, 1}, 1);
    RT lp = logits.log_softmax(1);
    RT entropy = -(lp.exp() * lp).sum({1});
    RT adv = (logits - logits.max(1, true)) * v + v.tanh();
    RT w = source(ctx, {t}, {300, 16}, 2);
    RT wide = w.softmax(1) + (w * w).sum({1}, true);  // sums over 16 columns, of products too
    RT greedy = logits.argmax(1).cast(DType::Float32) + entropy;  // in the cluster
    return std::vector<RT>{lp.retain(), greedy.retain(), logits.argmax(1).retain(),
                           adv.retain(), wide.retain(), (v * 2.0).sum({1}).retain()};
  };
  const Bounds bounds = {{Expr::bound("T"), 3}};
  const std::vector<std::vector<int64_t>> points = {{0}, {2}};
  using backend::LoopSchedules;
  const std::string dir = ::testing::TempDir() + "tempo_interchange." + std::to_string(getpid());
  fs::remove_all(dir);
  setenv("TEMPO_CACHE_DIR", dir.c_str(), 1);
  Result rows = run({true, true, true, "cpu", LoopSchedules::RowsOuter}, build, bounds, points);
  Result columns =
      run({true, true, true, "cpu", LoopSchedules::ColumnsOuter}, build, bounds, points);
  Result measured = run({true, true, true, "cpu", LoopSchedules::Measured}, build, bounds, points);
  // A policy that interchanges the loops over two columns only: its clusters' rows are constant,
  // so it decides at compile time.
  std::vector<std::pair<int64_t, int64_t>> asked;
  auto policy = [&](const backend::LoopFeatures& f, int64_t r, int64_t c) {
    EXPECT_GT(f.values[0] + f.values[1], 0);  // sums or maxima: it reduces rows
    asked.emplace_back(r, c);
    return c == 2 ? backend::LoopOrder::ColumnsOuter : backend::LoopOrder::RowsOuter;
  };
  Result chosen =
      run({true, true, true, "cpu", LoopSchedules::Policy, policy}, build, bounds, points);
  unsetenv("TEMPO_CACHE_DIR");
  EXPECT_GE(asked.size(), 3u);
  for (const auto& [r, c] : asked) EXPECT_EQ(r, 300);
  ASSERT_EQ(rows.values.size(), columns.values.size());
  for (size_t k = 0; k < rows.values.size(); ++k) {
    EXPECT_TRUE(torch::equal(bits(rows.values[k]), bits(columns.values[k]))) << "value " << k;
    EXPECT_TRUE(torch::equal(bits(rows.values[k]), bits(measured.values[k]))) << "value " << k;
    EXPECT_TRUE(torch::equal(bits(rows.values[k]), bits(chosen.values[k]))) << "value " << k;
  }
  EXPECT_TRUE(torch::isnan(rows.values[0]).any().item<bool>());  // the NaN rows are there
  int interchanged = 0, loops = 0;
  for (const VectorizedSource& v : vectorization_reports(dir))
    for (size_t n = 0; n < v.lines.size(); ++n) {
      interchanged += v.lines[n].find("_columns(int64_t rows") != std::string::npos;
      // The passes over the columns (a row's store alone may become a memcpy).
      if (v.lines[n].find("for (int64_t q = 0; q < rn; ++q) {") == std::string::npos || n < 2 ||
          v.lines[n - 2].find("for (int64_t j = 0; j < cols; ++j)") == std::string::npos)
        continue;
      ++loops;
      // An `omp simd` loop is reported at a line of its body, before the next loop.
      size_t end = n + 1;
      while (end < v.lines.size() && v.lines[end].find("for (") == std::string::npos) ++end;
      const auto first = v.reported.lower_bound(static_cast<int>(n + 1));
      EXPECT_TRUE(first != v.reported.end() && *first <= static_cast<int>(end))
          << "not vectorized, line " << n + 1 << " of " << v.path;
    }
  EXPECT_GE(interchanged, 3);  // the two-logit clusters and the 16-column softmax
  EXPECT_GT(loops, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tempo

namespace tempo {
namespace {

// The generated loops' float exp, log, tanh and sigmoid (branch-free polynomials) against
// LibTorch's, over their whole range: normal values, subnormals, zeros, infinities and NaN.
TEST(Fusion, GeneratedMathMatchesLibTorch) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1e-45f,
                               1e-40f,
                               1.1754944e-38f,
                               1e-30f,
                               1e-7f,
                               0.5f,
                               0.625f,
                               0.6249f,
                               1.0f,
                               2.0f,
                               9.0f,
                               20.0f,
                               87.0f,
                               88.7f,
                               89.0f,
                               1e30f,
                               std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN()};
  for (float v = -110.0f; v <= 110.0f; v += 0.0137f) values.push_back(v);
  const int64_t n = static_cast<int64_t>(values.size());
  torch::Tensor x = torch::from_blob(values.data(), {n}, torch::kFloat32).clone();
  x = torch::cat({x, -x});
  using F = std::function<RT(const RT&)>;
  using G = std::function<torch::Tensor(const torch::Tensor&)>;
  const std::vector<std::tuple<const char*, F, G>> fns = {
      {"exp", [](const RT& a) { return a.exp(); }, [](const torch::Tensor& a) { return a.exp(); }},
      {"log", [](const RT& a) { return a.abs().log(); },
       [](const torch::Tensor& a) { return a.abs().log(); }},
      {"tanh", [](const RT& a) { return a.tanh(); },
       [](const torch::Tensor& a) { return a.tanh(); }},
      {"sigmoid", [](const RT& a) { return a.sigmoid(); },
       [](const torch::Tensor& a) { return a.sigmoid(); }},
  };
  for (const auto& [name, f, g] : fns) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    HostTensor h(DType::Float32, {2 * n});
    std::memcpy(h.ptr<float>(), x.data_ptr<float>(), sizeof(float) * 2 * n);
    RT in = ctx.udf("values", [h](auto&, auto&) { return std::vector<HostTensor>{h}; }, {},
                    {TensorType{DType::Float32, {2 * n}}}, {t})[0];
    RT y = (f(in) * 1.0).retain();  // two ops: a generated cluster
    CompileOptions o;
    o.passes = PassOptions::none();
    o.passes.fusion = true;
    Executable exe = compile(ctx, {{t.bound, 1}}, o);
    exe.run();
    torch::Tensor got = to_torch(exe.get(y, {0}));
    torch::Tensor want = g(x);
    torch::Tensor bad = ~torch::isclose(got, want, 1e-6, 1e-37, /*equal_nan=*/true);
    EXPECT_EQ(bad.sum().item<int64_t>(), 0)
        << name << " differs at x = " << x.index({bad}).slice(0, 0, 8) << "\ngot "
        << got.index({bad}).slice(0, 0, 8) << "\nwant " << want.index({bad}).slice(0, 0, 8);
  }
}

}  // namespace
}  // namespace tempo

namespace tempo {
namespace {

// Reductions of the last dimension inside generated loops: log-softmax, softmax, a row sum
// without keepdim feeding per-row ops, and max with its argmax (ties give the first index, as in
// LibTorch), against LibTorch on the same values.
TEST(Fusion, GeneratedRowReductionsMatchLibTorch) {
  auto build = [](Context& ctx) {
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {5, 4});
    RT ties = (x * 2.0).floor();  // repeated maxima in a row
    auto [m, arg] = ties.max_with_indices(1, false);
    RT ent = -(x.softmax(1) * x.log_softmax(1)).sum(1);  // per row, no keepdim
    return std::vector<RT>{x.log_softmax(1).retain(), (x * 3.0).softmax(1).retain(),
                           (ent * 2.0 + 1.0).retain(), (m + 0.5).retain(),
                           (arg.cast(DType::Float32) + 0.5).retain()};
  };
  const Bounds bounds = {{Expr::bound("T"), 2}};
  std::vector<std::vector<int64_t>> points = {{0}, {1}};
  Result on = run({true, true}, build, bounds, points);
  Result off = run({false, false}, build, bounds, points);
  for (size_t k = 0; k < points.size(); ++k) {
    torch::Tensor x = eager_source(points[k], {5, 4});
    auto [m, arg] = (x * 2.0).floor().max(1);
    torch::Tensor ent = -(x.softmax(1) * x.log_softmax(1)).sum(1);
    std::vector<torch::Tensor> want = {x.log_softmax(1), (x * 3.0).softmax(1), ent * 2.0 + 1.0,
                                       m + 0.5, arg.to(torch::kFloat32) + 0.5};
    for (size_t o = 0; o < want.size(); ++o) {
      expect_close(on.values[o * points.size() + k], want[o], cat("output ", o, " (generated)"));
      expect_close(off.values[o * points.size() + k], want[o], cat("output ", o, " (unfused)"));
    }
  }
}

}  // namespace
}  // namespace tempo

namespace tempo {
namespace {

// Row maxima in the generated loops (in vectors, then a search from the row's start where the
// first NaN, the sign of a zero or the index matters) against LibTorch's unfused, bit for bit:
// rows of signed zeros, ties, NaN, minus infinity and plain values, 64 columns, with and without
// the index read; the log-softmax around such a maximum within rounding.
TEST(Fusion, GeneratedMaximaMatchLibTorchBitForBit) {
  auto build = [](Context& ctx) {
    Dim t = ctx.dim("t", "T");
    RT v = source(ctx, {t}, {6, 64});
    std::vector<RT> outs;
    RT zeros = where(v < -0.5, -1.0, v * 0.0);  // -1, -0 and +0: maxima of either sign
    for (const RT& x : {zeros, v.floor(), (v - 0.9).log(), (v * 0.0).abs().log(), v}) {
      auto [m, arg] = x.max_with_indices(1, false);
      outs.push_back((m * 2.0).retain());                       // the value alone
      outs.push_back((arg.cast(DType::Float32) + m).retain());  // and the index
      outs.push_back(x.log_softmax(1).retain());                // a maximum in a cluster
    }
    return outs;
  };
  const Bounds bounds = {{Expr::bound("T"), 2}};
  const std::vector<std::vector<int64_t>> points = {{0}, {1}};
  Result on = run({true, true, true, "cpu"}, build, bounds, points);  // the C++ loops
  Result off = run({false, false, true, "cpu"}, build, bounds, points);
  ASSERT_EQ(on.values.size(), off.values.size());
  for (size_t k = 0; k < on.values.size(); ++k) {
    const torch::Tensor &got = on.values[k], &want = off.values[k];
    if ((k / points.size()) % 3 == 2)  // the log-softmax: exp and log are polynomials here
      EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6, /*equal_nan=*/true)) << "value " << k;
    else
      EXPECT_TRUE(torch::equal(bits(got), bits(want)))
          << "value " << k << ": " << got << " against " << want;
  }
  EXPECT_TRUE(torch::isnan(on.values[12]).any().item<bool>());  // the maxima of NaN rows
}

// A reduction whose input is a uniform constant (the log-softmax of constant logits, as a
// Categorical over no information): the constant is a literal in the generated loop, which
// compiles (the program runs on generated code, not on the LibTorch fallback).
TEST(Fusion, ReductionOfAConstantIsGenerated) {
  const std::string dir = ::testing::TempDir() + "tempo_constant_cache." + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("TEMPO_CACHE_DIR", dir.c_str(), 1);
  Context ctx;
  Dim b = ctx.dim("b", "B");
  RT logits = ctx.constant(0.0, {8}, DType::Float32, {b});
  RT y = logits.log_softmax(0).retain();
  CompileOptions o;
  o.device = "cpu";  // the C++ libraries are counted
  Executable exe = compile(ctx, {{b.bound, 4}}, o);
  exe.run();
  int libraries = 0;
  if (std::filesystem::exists(dir + "/kernels"))
    for (const auto& e : std::filesystem::directory_iterator(dir + "/kernels"))
      libraries += e.path().extension() == ".so";
  unsetenv("TEMPO_CACHE_DIR");
  std::filesystem::remove_all(dir);
  expect_close(to_torch(exe.get(y, {3})), torch::full({8}, -std::log(8.0)), "log-softmax");
  const bool generated =
      std::getenv("TEMPO_NO_PASS") == nullptr && !std::getenv("TEMPO_NO_CODEGEN");
  if (generated) EXPECT_EQ(libraries, 1);
}

}  // namespace
}  // namespace tempo
