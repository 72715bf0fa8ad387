// Whole programs: recurrences with initial branches, state through merge cycles, conditional
// execution, schedules with future dependencies, memory, and errors naming the user's line.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "driver/compile.h"
#include "e2e/e2e_util.h"
#include "expect_error.h"
#include "util/error.h"

namespace tempo {
namespace {

using testing::eager_source;
using testing::expect_close;
using testing::source;
using testing::to_torch;

// s[0] = x[0];  s[t + 1] = 0.5 * s[t] + x[t]   (previous step with an initial branch)
TEST(Programs, RecurrenceWithInitialBranch) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {4});
  RT s = ctx.placeholder({DType::Float32, {4}}, {t}, "s");
  s[0] = x[0];
  s[t.var + 1] = s[t.var] * 0.5 + x;
  RT out = s.retain();
  Executable exe = compile(ctx, {{t.bound, 9}});
  exe.run();
  torch::Tensor ref = eager_source({0}, {4});
  for (int64_t k = 0; k < 9; ++k) {
    if (k > 0) ref = ref * 0.5 + eager_source({k - 1}, {4});
    expect_close(to_torch(exe.get(out, {k})), ref, "s[" + std::to_string(k) + "]");
  }
}

// A counter over iterations: c[0] = 0; c[i + 1] = c[i] + 1.
TEST(Programs, CounterThroughMergeCycle) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  RT c = ctx.placeholder({DType::Float32, {}}, {i}, "c");
  c[0] = ctx.zeros({});
  c[i.var + 1] = c[i.var] + 1.0;
  RT out = c.retain();
  Executable exe = compile(ctx, {{i.bound, 12}});
  exe.run();
  for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(exe.get(out, {k}).at(0), static_cast<double>(k));
}

// An exponential moving average over iterations of a per-iteration source.
TEST(Programs, ExponentialMovingAverage) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  RT x = source(ctx, {i}, {5});
  RT e = ctx.placeholder({DType::Float32, {5}}, {i}, "ema");
  e[0] = x[0];
  e[i.var + 1] = e[i.var] * 0.9 + x * 0.1;
  RT out = e.retain();
  Executable exe = compile(ctx, {{i.bound, 6}});
  exe.run();
  torch::Tensor ref = eager_source({0}, {5});
  for (int64_t k = 0; k < 6; ++k) {
    if (k > 0) ref = ref * 0.9 + eager_source({k - 1}, {5}) * 0.1;
    expect_close(to_torch(exe.get(out, {k})), ref, "ema[" + std::to_string(k) + "]");
  }
}

// Recording sink: remembers the points at which it ran.
struct Recorder {
  std::vector<std::string> events;
  ir::Udf::fn_type fn(const std::string& tag) {
    return [this, tag](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
      std::string s = tag;
      for (int64_t v : p) s += " " + std::to_string(v);
      events.push_back(s);
      return std::vector<HostTensor>{};
    };
  }
  ptrdiff_t pos(const std::string& e) const {
    auto it = std::find(events.begin(), events.end(), e);
    return it == events.end() ? -1 : it - events.begin();
  }
};

TEST(Programs, ConditionalExecutionFiresExactlyWhereConditionHolds) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  RT x = source(ctx, {i}, {2});
  Recorder rec;
  ctx.udf("checkpoint", rec.fn("ckpt"), {x[(i.var + 1) % 5 == 0]}, {}, {i});
  Executable exe = compile(ctx, {{i.bound, 23}});
  exe.run();
  std::vector<std::string> expected = {"ckpt 4", "ckpt 9", "ckpt 14", "ckpt 19"};
  EXPECT_EQ(rec.events, expected);
}

// y[t] = f(x[t:min(t+3, T)]) must run after x[t + 2] (TEMPO Fig. 14).
TEST(Programs, FutureWindowDelaysTheSink) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  Recorder rec;
  auto x_fn = [&rec](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    rec.events.push_back("x " + std::to_string(p[0]));
    return std::vector<HostTensor>{HostTensor::scalar(static_cast<double>(p[0]))};
  };
  RT x = ctx.udf("x", x_fn, {}, {TensorType{DType::Float32, {}}}, {t})[0];
  RT y = x[slice(t.var, min(t.var + 3, t.bound))].sum(0);
  ctx.udf("y", rec.fn("y"), {y}, {}, {t});
  CompileOptions o;
  o.passes.lifting = false;  // lifted, the window sums read one scan of every x
  Executable exe = compile(ctx, {{t.bound, 10}}, o);
  exe.run();
  for (int64_t k = 0; k < 10; ++k) {
    ptrdiff_t py = rec.pos("y " + std::to_string(k));
    ptrdiff_t px = rec.pos("x " + std::to_string(std::min<int64_t>(k + 2, 9)));
    ASSERT_GE(py, 0);
    ASSERT_GE(px, 0);
    EXPECT_GT(py, px) << "y[" << k << "] ran before x[" << std::min<int64_t>(k + 2, 9) << "]";
  }
  // The schedule interleaves: y[0] runs before the last x (it is not "all x, then all y").
  EXPECT_LT(rec.pos("y 0"), rec.pos("x 9")) << exe.schedule_str();
}

TEST(Programs, OnlyFutureDependenciesRun) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3});
  RT y = x[slice(t.var, t.bound)].sum(0).retain();
  Executable exe = compile(ctx, {{t.bound, 6}});
  exe.run();
  torch::Tensor ref = torch::zeros({3});
  for (int64_t k = 5; k >= 0; --k) {
    ref += eager_source({k}, {3});
    expect_close(to_torch(exe.get(y, {k})), ref, "y");
  }
}

// Peak memory of an iterative program does not grow with the number of iterations.
int64_t peak_of_iterative_program(int64_t iterations) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  RT w = ctx.placeholder({DType::Float32, {256}}, {i}, "w");
  w[0] = ctx.ones({256});
  RT g = ctx.rand_normal({256}, {i});
  w[i.var + 1] = w[i.var] - g * 0.01;
  Executable exe = compile(ctx, {{i.bound, iterations}});
  exe.run();
  return exe.memory().peak_bytes;
}

TEST(Programs, PeakMemoryIndependentOfIterations) {
  int64_t small = peak_of_iterative_program(10);
  int64_t large = peak_of_iterative_program(1000);
  EXPECT_GT(small, 0);
  EXPECT_EQ(small, large);
}

// ---- bad input: each error names the RT and the user's line ----

template <typename F>
std::string error_of(F&& f) {
  return testing::user_error_of(std::forward<F>(f));
}

std::string here(Loc loc = Loc::current()) { return where(loc); }

TEST(Errors, WrongShapes) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT a = ctx.zeros({3});
  RT b = ctx.zeros({4});
  (void)t;
  std::string line;
  std::string msg = error_of([&] { line = here(); RT c = a + b; });
  EXPECT_NE(msg.find(line), std::string::npos) << msg;
}

TEST(Errors, UnboundSymbol) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  std::string msg = error_of([&] { compile(ctx, {}); });
  EXPECT_NE(msg.find("T"), std::string::npos) << msg;
}

TEST(Errors, OutOfDomainIndexing) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  std::string line = here(); RT y = x[t.var + 1].named("y");
  ctx.udf("sink", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {y}, {}, {t});
  std::string msg = error_of([&] { compile(ctx, {{t.bound, 5}}); });
  EXPECT_NE(msg.find("outside"), std::string::npos) << msg;
  EXPECT_NE(msg.find(line), std::string::npos) << msg;
}

TEST(Errors, UnschedulableCycle) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  // a[t] reads b[t] and b[t] reads a[t]: a cycle of same-step dependences.
  RT a = ctx.placeholder({DType::Float32, {}}, {t}, "a");
  std::string line = here(); RT b = (a + 1.0).named("b");
  a[t.var] = b * 2.0;
  b.retain();  // an output: a cycle nothing reads is removed as dead code before scheduling
  std::string msg = error_of([&] { compile(ctx, {{t.bound, 4}}); });
  EXPECT_NE(msg.find(line), std::string::npos) << msg;
}

TEST(Errors, NeverDefined) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  std::string line = here(); RT a = ctx.placeholder({DType::Float32, {}}, {t}, "a");
  RT b = (a + 1.0).retain();
  std::string msg = error_of([&] { compile(ctx, {{t.bound, 4}}); });
  EXPECT_NE(msg.find(line), std::string::npos) << msg;
  EXPECT_NE(msg.find("'a'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace tempo
