// Lifting (passes/lifting.cpp): the SDG before and after for each lifted form and for the sums
// left alone, and the values of every window pattern, lifted and not, against LibTorch eager sums.
#include "driver/compile.h"
#include "passes/lifting.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <utility>

#include "api/autodiff.h"
#include "api/tempo.h"
#include "driver/executable_impl.h"
#include "e2e/e2e_util.h"
#include "passes/pass_test_util.h"

namespace tempo {
namespace {

using testing::after_pass;
using testing::eager_source;
using testing::expect_close;
using testing::moving_windows;
using testing::source;
using testing::text;
using testing::to_torch;

// Runs lifting alone over the Context's program; the text after it (validated).
std::string lifted(const Context& ctx, bool expect_change = true) {
  return after_pass(ctx, passes::lift_scans, expect_change);
}

// ---- the SDG after lifting --------------------------------------------------------------------

// sum(x[a:T]) = flip(cumsum(flip(x)))[a]; the other entries of the read carry over to the scan.
TEST(Lift, SuffixIsAReversedScan) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT x = source(ctx, {i, t}, {2});
  RT y = x[{i.var, slice(t.var, t.bound)}].sum(0).retain();
  EXPECT_EQ(lifted(ctx),
            "%0 = Udf() {udf=source} : f32(2) over (i, t)\n"
            "%1 = Index(%4[i]) {ints=[0], exprs=[t]} : f32(2) over (i, t)\n"
            "%2 = Flip(%0[i, 0:T]) {ints=[0]} : f32(T, 2) over (i)\n"
            "%3 = CumSum(%2[i]) {ints=[0]} : f32(T, 2) over (i)\n"
            "%4 = Flip(%3[i]) {ints=[0]} : f32(T, 2) over (i)\n");
}

// sum(x[0:b]) = cumsum(x)[b - 1] where b >= 1; padded with a leading 0 where b may be 0.
TEST(Lift, PrefixIsAScan) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT y = x[slice(0, t.var + 1)].sum(0).retain();
  RT z = x[slice(0, t.var)].sum(0).retain();
  EXPECT_EQ(lifted(ctx),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Index(%3[]) {ints=[0], exprs=[t]} : f32(2) over (t)\n"
            "%2 = Index(%5[]) {ints=[0], exprs=[t]} : f32(2) over (t)\n"
            "%3 = CumSum(%0[0:T]) {ints=[0]} : f32(T, 2)\n"
            "%4 = CumSum(%0[0:T]) {ints=[0]} : f32(T, 2)\n"
            "%5 = Pad(%4[]) {ints=[0], exprs=[1, 0], scalar=0} : f32(T + 1, 2)\n");
}

// sum(x[a:b]) = P[b] - P[a] with P = pad(cumsum(x), 1 before); the sum becomes the difference.
TEST(Lift, WindowIsADifferenceOfPrefixes) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT y = x[slice(max(0, t.var - 3), t.var + 1)].sum(0).retain();
  EXPECT_EQ(lifted(ctx),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Sub(%4[t], %5[t]) : f32(2) over (t)\n"
            "%2 = CumSum(%0[0:T]) {ints=[0]} : f32(T, 2)\n"
            "%3 = Pad(%2[]) {ints=[0], exprs=[1, 0], scalar=0} : f32(T + 1, 2)\n"
            "%4 = Index(%3[]) {ints=[0], exprs=[t + 1]} : f32(2) over (t)\n"
            "%5 = Index(%3[]) {ints=[0], exprs=[max(t - 3, 0)]} : f32(2) over (t)\n");
}

// A sum over the window and other dims sums the others first: the scan is smaller.
TEST(Lift, OtherSummedDimsAreReducedBeforeTheScan) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2, 3});
  RT y = x[slice(t.var, t.bound)].sum().retain();
  EXPECT_EQ(lifted(ctx),
            "%0 = Udf() {udf=source} : f32(2, 3) over (t)\n"
            "%1 = Index(%5[]) {ints=[0], exprs=[t]} : f32() over (t)\n"
            "%2 = Sum(%0[0:T]) {ints=[1, 2]} : f32(T)\n"
            "%3 = Flip(%2[]) {ints=[0]} : f32(T)\n"
            "%4 = CumSum(%3[]) {ints=[0]} : f32(T)\n"
            "%5 = Flip(%4[]) {ints=[0]} : f32(T)\n");
}

// A window along i read at t: one scan over i per t.
TEST(Lift, WindowAlongAnOuterDim) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT x = source(ctx, {i, t}, {2});
  RT y = x[{slice(0, i.var + 1), t.var}].sum(0).retain();
  EXPECT_EQ(lifted(ctx),
            "%0 = Udf() {udf=source} : f32(2) over (i, t)\n"
            "%1 = Index(%2[t]) {ints=[0], exprs=[i]} : f32(2) over (i, t)\n"
            "%2 = CumSum(%0[0:I, t]) {ints=[0]} : f32(I, 2) over (t)\n");
}

// The discounted sum over the future (RL returns) is one reverse discounted scan, its episode
// ends read over the same dims; padded after where the window may be empty.
TEST(Lift, DiscountedFutureIsAReverseDiscountedScan) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT r = source(ctx, {i, t}, {2});
  RT done = source(ctx, {i, t}, {2}, 1);
  Expr future = slice(t.var, t.bound);
  r[{i.var, future}].discounted_sum(0.9, done[{i.var, future}]).retain();
  r[{i.var, slice(t.var + 1, t.bound)}].discounted_sum(0.5).retain();
  EXPECT_EQ(lifted(ctx),
            "%0 = Udf() {udf=source} : f32(2) over (i, t)\n"
            "%1 = Udf() {udf=source} : f32(2) over (i, t)\n"
            "%2 = Index(%4[i]) {ints=[0], exprs=[t]} : f32(2) over (i, t)\n"
            "%3 = Index(%6[i]) {ints=[0], exprs=[t + 1]} : f32(2) over (i, t)\n"
            "%4 = DiscountedCumSum(%0[i, 0:T], %1[i, 0:T]) {ints=[0], exprs=[1], scalar=0.9} : "
            "f32(T, 2) over (i)\n"
            "%5 = DiscountedCumSum(%0[i, 0:T]) {ints=[0], exprs=[1], scalar=0.5} : f32(T, 2) over "
            "(i)\n"
            "%6 = Pad(%5[i]) {ints=[0], exprs=[0, 1], scalar=0} : f32(T + 1, 2) over (i)\n");
}

// The returns of iteration i may feed acting from iteration i + 1 on (the policy learns from
// them): the scan over iteration i's rewards does not wait for its reader.
TEST(Lift, DiscountedFutureFeedingTheNextIteration) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT w = ctx.placeholder({DType::Float32, {2}}, {i}, "w");
  w[0] = ctx.zeros({2});
  RT r = ctx.placeholder({DType::Float32, {2}}, {i, t}, "r");
  r[{i.var, t.var}] = source(ctx, {i, t}, {2}) + w[i.var];
  RT g = r[{i.var, slice(t.var, t.bound)}].discounted_sum(0.9);
  w[i.var + 1] = w[i.var] + g[{i.var, slice(0, t.bound)}].sum(0);
  std::string after = lifted(ctx);
  EXPECT_NE(after.find("DiscountedCumSum"), std::string::npos) << after;
  EXPECT_EQ(after.find("DiscountedSum"), std::string::npos) << after;
}

// What is not lifted: nothing changes.
TEST(Lift, LeavesOtherSumsAlone) {
  auto unchanged = [](const std::function<void(Context&, const Dim&, const RT&)>& build) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {2});
    build(ctx, t, x);
    std::string before = text(ctx.graph());
    EXPECT_EQ(lifted(ctx, false), before);
  };
  // A window that does not move: one sum, nothing to share.
  unchanged([](Context&, const Dim& t, const RT& x) { x[slice(0, t.bound)].sum(0).retain(); });
  // A window with a step.
  unchanged(
      [](Context&, const Dim& t, const RT& x) { x[slice(t.var, t.bound, 2)].sum(0).retain(); });
  // keepdim, a sum that keeps the window, an integer sum.
  unchanged(
      [](Context&, const Dim& t, const RT& x) { x[slice(t.var, t.bound)].sum(0, true).retain(); });
  unchanged([](Context&, const Dim& t, const RT& x) { x[slice(t.var, t.bound)].sum(1).retain(); });
  unchanged([](Context&, const Dim& t, const RT& x) {
    x.cast(DType::Int64)[slice(0, t.var + 1)].sum(0).retain();
  });
  // A window that may reach outside x, past its end or before its start (the scheduler says so).
  unchanged(
      [](Context&, const Dim& t, const RT& x) { x[slice(t.var, t.var + 3)].sum(0).retain(); });
  unchanged(
      [](Context&, const Dim& t, const RT& x) { x[slice(t.var - 1, t.var + 1)].sum(0).retain(); });
  // Discounted sums over a window that ends before T (n-step returns).
  unchanged([](Context&, const Dim& t, const RT& x) {
    x[slice(t.var, min(t.var + 3, t.bound))].discounted_sum(0.9).retain();
  });
  // Episode ends read over another window than the rewards.
  unchanged([](Context&, const Dim& t, const RT& x) {
    x[slice(t.var, t.bound)].discounted_sum(0.9, x[slice(0, t.bound - t.var)]).retain();
  });
  // The rewards of the same iteration depend on the returns: r[t + 1] = x[t] + G[t].
  unchanged([](Context& ctx, const Dim& t, const RT& x) {
    RT r = ctx.placeholder({DType::Float32, {2}}, {t}, "r");
    r[0] = ctx.zeros({2});
    RT g = r[slice(t.var, t.bound)].discounted_sum(0.9);
    r[t.var + 1] = x[t.var] + g;
    g.retain();
  });
  // The window's source reads the sum: s[t + 1] = x[t] + s[0:t+1].sum(0) / 2.
  unchanged([](Context& ctx, const Dim& t, const RT& x) {
    RT s = ctx.placeholder({DType::Float32, {2}}, {t}, "s");
    s[0] = ctx.zeros({2});
    RT y = s[slice(0, t.var + 1)].sum(0);
    s[t.var + 1] = x[t.var] + y * 0.5;
    y.retain();
  });
}

// A window past the end of x is the user's error, lifted or not.
TEST(Lift, WindowOutsideTheSourceIsAnError) {
  for (bool lifting : {true, false}) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {2});
    x[slice(t.var, t.var + 3)].sum(0).retain();
    CompileOptions o;
    o.passes.lifting = lifting;
    try {
      compile(ctx, {{t.bound, 6}}, o);
      ADD_FAILURE() << "expected a UserError";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("outside its domain"), std::string::npos) << e.what();
    }
  }
}

// ---- values against LibTorch -----------------------------------------------------------------

struct Window {
  std::string name;
  std::function<Expr(const Dim&)> expr;
  std::function<std::pair<int64_t, int64_t>(int64_t, int64_t)> range;  // [a, b) at t, for T
};

std::vector<Window> windows() {
  using R = std::pair<int64_t, int64_t>;
  return {
      {"future t:T", [](const Dim& t) { return slice(t.var, t.bound); },
       [](int64_t t, int64_t T) {
         return R{t, T};
       }},
      {"past 0:t+1", [](const Dim& t) { return slice(0, t.var + 1); },
       [](int64_t t, int64_t) {
         return R{0, t + 1};
       }},
      {"past window max(0,t-3):t+1",
       [](const Dim& t) { return slice(max(0, t.var - 3), t.var + 1); },
       [](int64_t t, int64_t) {
         return R{std::max<int64_t>(0, t - 3), t + 1};
       }},
      {"future window t:min(t+3,T)",
       [](const Dim& t) { return slice(t.var, min(t.var + 3, t.bound)); },
       [](int64_t t, int64_t T) {
         return R{t, std::min(t + 3, T)};
       }},
      // Empty at one end: the padded scans.
      {"strict past 0:t", [](const Dim& t) { return slice(0, t.var); },
       [](int64_t t, int64_t) {
         return R{0, t};
       }},
      {"strict future t+1:T", [](const Dim& t) { return slice(t.var + 1, t.bound); },
       [](int64_t t, int64_t T) {
         return R{t + 1, T};
       }},
  };
}

// y = x[..., window(t)].sum(0) over (t) or (i, t), compiled with lifting on or off, against the
// eager sums.
void check_window(const Window& w, bool outer, bool lifting) {
  const int64_t T = 9, I = 2;
  Context ctx;
  Dims domain;
  if (outer) domain.push_back(ctx.dim("i", "I"));
  Dim t = ctx.dim("t", "T");
  domain.push_back(t);
  RT x = source(ctx, domain, {2, 3});
  std::vector<Expr> idx;
  if (outer) idx.push_back(domain[0].var);
  idx.push_back(w.expr(t));
  RT y = x[seq(idx)].sum(0).retain();
  RT z = (x[seq(idx)].sum(0) * 2.0).retain();  // not retained itself: vectorized when lifted
  CompileOptions o;
  o.passes.lifting = lifting;
  o.passes.check_ir = true;
  Bounds bounds{{t.bound, T}};
  if (outer) bounds.push_back({domain[0].bound, I});
  Executable exe = compile(ctx, bounds, o);
  exe.run();
  std::string what =
      w.name + (outer ? " over (i, t)" : " over (t)") + (lifting ? ", lifted" : ", not lifted");
  if (lifting) {
    EXPECT_EQ(moving_windows(exe.impl().graph, t), 0) << what;
  }
  for (int64_t i = 0; i < (outer ? I : 1); ++i)
    for (int64_t k = 0; k < T; ++k) {
      auto [a, b] = w.range(k, T);
      torch::Tensor want = torch::zeros({2, 3});
      for (int64_t s = a; s < b; ++s)
        want += eager_source(outer ? std::vector<int64_t>{i, s} : std::vector<int64_t>{s}, {2, 3});
      std::vector<int64_t> point = outer ? std::vector<int64_t>{i, k} : std::vector<int64_t>{k};
      std::string at = what + " at t = " + std::to_string(k);
      expect_close(to_torch(exe.get(y, point)), want, at);
      expect_close(to_torch(exe.get(z, point)), want * 2, at);
    }
}

TEST(Lift, WindowsMatchEagerLiftedOrNot) {
  for (const Window& w : windows())
    for (bool outer : {false, true})
      for (bool lifting : {true, false}) check_window(w, outer, lifting);
}

// A window along i, read at each t.
TEST(Lift, WindowAlongAnOuterDimMatchesEager) {
  const int64_t I = 7, T = 3;
  for (bool lifting : {true, false}) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = source(ctx, {i, t}, {2});
    RT y = x[{slice(max(0, i.var - 2), i.var + 1), t.var}].sum(0).retain();
    CompileOptions o;
    o.passes.lifting = lifting;
    Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}}, o);
    exe.run();
    for (int64_t a = 0; a < I; ++a)
      for (int64_t b = 0; b < T; ++b) {
        torch::Tensor want = torch::zeros({2});
        for (int64_t s = std::max<int64_t>(0, a - 2); s <= a; ++s)
          want += eager_source({s, b}, {2});
        expect_close(to_torch(exe.get(y, {a, b})), want, "window along i");
      }
  }
}

// The returns over the future within episodes, lifted or not, against the eager definition;
// also one step later (t + 1:T, empty at the last step), and per (i, t).
TEST(Lift, DiscountedFutureMatchesEager) {
  const int64_t I = 2, T = 9;
  const double gamma = 0.9;
  for (bool lifting : {true, false}) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT r = source(ctx, {i, t}, {3});
    RT done = (source(ctx, {i, t}, {3}, 1) > 0.6).cast(DType::Float32);
    Expr now = slice(t.var, t.bound), next = slice(t.var + 1, t.bound);
    RT g = r[{i.var, now}].discounted_sum(gamma, done[{i.var, now}]).retain();
    RT g1 = r[{i.var, next}].discounted_sum(gamma, done[{i.var, next}]).retain();
    CompileOptions o;
    o.passes.lifting = lifting;
    Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}}, o);
    exe.run();
    if (lifting) EXPECT_EQ(moving_windows(exe.impl().graph, t), 0);
    for (int64_t a = 0; a < I; ++a)
      for (int64_t k = 0; k < T; ++k)
        for (int64_t from : {k, k + 1}) {
          // sum_j gamma^(j - from) r[j] up to and including the first done.
          torch::Tensor want = torch::zeros({3}), alive = torch::ones({3});
          for (int64_t j = from; j < T; ++j) {
            want += alive * std::pow(gamma, j - from) * eager_source({a, j}, {3});
            alive = alive * (eager_source({a, j}, {3}, 1) <= 0.6).to(torch::kFloat32);
          }
          std::string at = cat(lifting ? "lifted" : "not lifted", " at ", a, ", ", k, " from ",
                               from);
          expect_close(to_torch(exe.get(from == k ? g : g1, {a, k})), want, at);
        }
  }
}

// A mean over the past is a lifted sum over a count.
TEST(Lift, RunningMeanMatchesEager) {
  const int64_t T = 12;
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3});
  RT y = x[slice(0, t.var + 1)].mean(0).retain();
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();
  EXPECT_EQ(moving_windows(exe.impl().graph, t), 0);
  torch::Tensor total = torch::zeros({3});
  for (int64_t k = 0; k < T; ++k) {
    total += eager_source({k}, {3});
    expect_close(to_torch(exe.get(y, {k})), total / static_cast<double>(k + 1), "running mean");
  }
}

// The source reads the sum (not lifted): s[t + 1] = x[t] + s[0:t+1].sum(0) / 2 still runs.
TEST(Lift, WindowOverARecurrenceMatchesEager) {
  const int64_t T = 8;
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT s = ctx.placeholder({DType::Float32, {2}}, {t}, "s");
  s[0] = ctx.zeros({2});
  RT y = s[slice(0, t.var + 1)].sum(0);
  s[t.var + 1] = x[t.var] + y * 0.5;
  RT out = y.retain();
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();
  torch::Tensor state = torch::zeros({2}), total = torch::zeros({2});
  for (int64_t k = 0; k < T; ++k) {
    total += state;
    expect_close(to_torch(exe.get(out, {k})), total, "sum of a recurrence");
    state = eager_source({k}, {2}) + total * 0.5;
  }
}

// The gradient of a parameter read at every step is a running sum along t written as a
// recurrence (autodiff frees each step's term as it adds it), read at its end: lifted to one sum
// over the batched terms, with no recurrence left; the same values as LibTorch's autograd.
TEST(Lift, RunningGradientSumIsOneSum) {
  const int64_t T = 9;
  for (bool lifting : {true, false}) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {3});
    RT w = source(ctx, {}, {3}, 1);
    RT y = (w * x).tanh().sum();
    RT g = grad(y[slice(0, t.bound)].sum(), {w})[0].retain();
    CompileOptions o;
    o.passes.lifting = lifting;
    o.passes.check_ir = true;
    Executable exe = compile(ctx, {{t.bound, T}}, o);
    exe.run();
    int merges = 0;
    for (const ir::OpNode& op : exe.impl().graph.ops()) merges += op.kind == ir::OpKind::Merge;
    EXPECT_EQ(merges, lifting ? 0 : 1);
    torch::Tensor tw = eager_source({}, {3}, 1).requires_grad_(true);
    torch::Tensor total = torch::zeros({});
    for (int64_t k = 0; k < T; ++k) total = total + (tw * eager_source({k}, {3})).tanh().sum();
    total.backward();
    expect_close(to_torch(exe.get(g, {})), tw.grad(), lifting ? "lifted" : "not lifted");
  }
}

// With PassOptions::interleave (TEMPO Fig. 23), a term that reads a recurrence a bounded number
// of steps ahead (here s[t:min(t + 2, T)]) streams: its window sum is not lifted to a scan of the
// whole recurrence, it is not batched over t, and the gradient's running sum over it stays a
// recurrence, so each step runs (and is freed) as the recurrence goes. Without it, all three are
// batched. The same values either way, against LibTorch's autograd.
TEST(Lift, InterleaveKeepsWhatStreamsWithARecurrence) {
  const int64_t T = 9;
  std::vector<torch::Tensor> grads;
  for (bool interleave : {false, true}) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {3});
    RT w = source(ctx, {}, {3}, 1);
    RT s = ctx.placeholder({DType::Float32, {3}}, {t}, "s");
    s[0] = ctx.zeros({3});
    s[t.var + 1] = s[t.var] * 0.5 + x[t.var];
    RT ahead = s[slice(t.var, min(t.var + 2, t.bound))].sum(0);
    RT y = (w * ahead).tanh().sum();
    RT g = grad(y[slice(0, t.bound)].sum(), {w})[0].retain();
    CompileOptions o;
    o.passes.interleave = interleave;
    o.passes.fusion = false;  // the ops counted below stay visible
    o.passes.check_ir = true;
    Executable exe = compile(ctx, {{t.bound, T}}, o);
    exe.run();
    int merges = 0, scans = 0, batched = 0;
    for (const ir::OpNode& op : exe.impl().graph.ops()) {
      merges += op.kind == ir::OpKind::Merge;
      scans += op.kind == ir::OpKind::CumSum;
      batched += op.kind == ir::OpKind::Tanh && op.domain.empty();
    }
    EXPECT_EQ(merges, interleave ? 2 : 1) << exe.impl().graph.str();
    EXPECT_EQ(scans, interleave ? 0 : 1) << exe.impl().graph.str();
    EXPECT_EQ(batched, interleave ? 0 : 1) << exe.impl().graph.str();
    grads.push_back(to_torch(exe.get(g, {})));
  }
  torch::Tensor tw = eager_source({}, {3}, 1).requires_grad_(true);
  std::vector<torch::Tensor> states{torch::zeros({3})};
  for (int64_t k = 0; k + 1 < T; ++k) states.push_back(states.back() * 0.5 + eager_source({k}, {3}));
  torch::Tensor total = torch::zeros({});
  for (int64_t k = 0; k < T; ++k) {
    torch::Tensor ahead = states[k];
    if (k + 1 < T) ahead = ahead + states[k + 1];
    total = total + (tw * ahead).tanh().sum();
  }
  total.backward();
  expect_close(grads[0], tw.grad(), "batched");
  expect_close(grads[1], tw.grad(), "interleaved");
}

// ---- work --------------------------------------------------------------------------------------

// y[t] = x[t:T].sum(0), then the sum over t of 2 y[t]: the launches of a run, lifted or not.
int64_t future_sum_launches(int64_t T, bool lifting) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {4});
  RT y = x[slice(t.var, t.bound)].sum(0);
  (y * 2.0)[slice(0, t.bound)].sum(0).retain();
  CompileOptions o;
  o.passes.lifting = lifting;
  Executable exe = compile(ctx, {{t.bound, T}}, o);
  exe.run();
  return exe.ops_executed();
}

// Lifted, the launches grow at most linearly with T, and the per-step sums of O(T) values are
// gone: one launch per step is left (the source), where unlifted there are two (source, sum).
TEST(Lift, LaunchesGrowLinearly) {
  int64_t on50 = future_sum_launches(50, true), on100 = future_sum_launches(100, true);
  int64_t off100 = future_sum_launches(100, false);
  EXPECT_LT(static_cast<double>(on100), 2.5 * static_cast<double>(on50));
  EXPECT_LT(on100, 110);
  EXPECT_GE(off100, 200);
}

}  // namespace
}  // namespace tempo
