// Symbolic automatic differentiation (TEMPO §3, Fig. 7) checked against LibTorch autograd on the
// same computations: every dependence pattern over one and two temporal dimensions, an MLP through
// the op set, recurrences through merges, detach, and errors.
#include <functional>
#include <string>

#include "api/autodiff.h"
#include "driver/compile.h"
#include "e2e/e2e_util.h"
#include "util/error.h"

namespace tempo {
namespace {

using testing::eager_source;
using testing::expect_close;
using testing::source;
using testing::to_torch;
using sym::seq;
using sym::slice;

std::vector<int64_t> range(int64_t a, int64_t b) {
  std::vector<int64_t> r;
  for (int64_t k = a; k < b; ++k) r.push_back(k);
  return r;
}

const int64_t kW = 3;  // window size

// Autograd's gradient of a leaf, zeros if nothing used it.
torch::Tensor grad_of(const torch::Tensor& leaf) {
  return leaf.grad().defined() ? leaf.grad() : torch::zeros_like(leaf);
}

struct Pattern {
  std::string name;
  // The index of t (undefined: the previous step, through a merge with a zero first branch).
  std::function<Expr(const Expr& t, const Expr& T)> phi;
  // Source timesteps read at sink timestep t, for bound T.
  std::function<std::vector<int64_t>(int64_t t, int64_t T)> reads;
};

std::vector<Pattern> patterns() {
  return {
      {"identity", [](auto& t, auto&) { return t; },
       [](int64_t t, int64_t) { return range(t, t + 1); }},
      {"previous", [](auto&, auto&) { return Expr(); },
       [](int64_t t, int64_t) { return t > 0 ? range(t - 1, t) : range(0, 0); }},
      {"const_range_0_8", [](auto&, auto&) { return slice(0, 8); },
       [](int64_t, int64_t) { return range(0, 8); }},
      {"all_0_T", [](auto&, auto& T) { return slice(0, T); },
       [](int64_t, int64_t T) { return range(0, T); }},
      {"past_0_t1", [](auto& t, auto&) { return slice(0, t + 1); },
       [](int64_t t, int64_t) { return range(0, t + 1); }},
      {"future_t_T", [](auto& t, auto& T) { return slice(t, T); },
       [](int64_t t, int64_t T) { return range(t, T); }},
      {"past_window", [](auto& t, auto&) { return slice(max(0, t - kW), t + 1); },
       [](int64_t t, int64_t) { return range(std::max<int64_t>(0, t - kW), t + 1); }},
      {"future_window", [](auto& t, auto& T) { return slice(t, min(t + kW, T)); },
       [](int64_t t, int64_t T) { return range(t, std::min(t + kW, T)); }},
  };
}

// loss[i, t] = tanh(w * r).sum() with r = sum of x[i, phi(t)] (x[i, t - 1] for the previous
// step, zero at t = 0); differentiates the total sum_{i,t} loss w.r.t. w and x, either from the
// per-point loss (the seed is 1 at every point) or from an explicit reduction over time.
void check_pattern(const Pattern& p, int ndims, bool reduce_first) {
  Context ctx;
  Dims all;
  if (ndims >= 2) all.push_back(ctx.dim("i", "I"));
  Dim tdim = ctx.dim("t", "T");
  all.push_back(tdim);
  const int64_t T = 10, I = 3;
  const std::vector<int64_t> shape{2, 3};

  RT x = source(ctx, all, shape, 1);
  RT w = source(ctx, {}, shape, 2);
  RT r;
  Expr e = p.phi(tdim.var, tdim.bound);
  if (!e.defined()) {
    RT prev = ctx.placeholder({DType::Float32, {2, 3}}, all, "prev");
    if (ndims == 1) {
      prev[0] = ctx.zeros({2, 3});
      prev[tdim.var + 1] = x;
    } else {
      prev[{all[0].var, Expr(0)}] = ctx.zeros({2, 3});
      prev[{all[0].var, tdim.var + 1}] = x;
    }
    r = prev;
  } else {
    std::vector<Expr> idx;
    for (size_t k = 0; k + 1 < all.size(); ++k) idx.push_back(all[k].var);
    idx.push_back(e);
    RT read = x[seq(idx)];
    r = e.is_slice() ? read.sum(0) : read;
  }
  RT loss = (w * r).tanh().sum();
  RT target = loss;
  if (reduce_first) {
    std::vector<Expr> full;
    for (const Dim& d : loss.domain()) full.push_back(slice(0, d.bound));
    target = full.empty() ? loss : loss[seq(full)].sum();
  }
  std::vector<RT> g = grad(target, {w, x});
  ASSERT_EQ(g[1].domain().size(), all.size());
  RT gw = g[0].retain(), gx = g[1].retain();

  Bounds bounds{{tdim.bound, T}};
  if (ndims >= 2) bounds.push_back({all[0].bound, I});
  Executable exe = compile(ctx, bounds);
  exe.run();

  // The same computation with LibTorch autograd.
  const int64_t outer = ndims == 2 ? I : 1;
  torch::Tensor tw = eager_source({}, shape, 2).requires_grad_(true);
  std::vector<std::vector<torch::Tensor>> tx(outer);
  auto point = [&](int64_t o, int64_t t) {
    return ndims == 2 ? std::vector<int64_t>{o, t} : std::vector<int64_t>{t};
  };
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < T; ++t)
      tx[o].push_back(eager_source(point(o, t), shape, 1).requires_grad_(true));
  torch::Tensor total = torch::zeros({});
  bool constant_read = !e.defined() ? false : !sym::depends_on(e, tdim.var);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < T; ++t) {
      torch::Tensor rt = torch::zeros({2, 3});
      for (int64_t s : p.reads(t, T)) rt = rt + tx[o][s];
      torch::Tensor l = (tw * rt).tanh().sum();
      // A constant read (0:8, 0:T) makes loss independent of t: one point per outer point.
      if (constant_read && t > 0) continue;
      total = total + l;
    }
  total.backward();

  std::string what = p.name + " ndims=" + std::to_string(ndims) +
                     (reduce_first ? " (reduced)" : " (per point)");
  expect_close(to_torch(exe.get(gw, {})), tw.grad(), what + " dw");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t t = 0; t < T; ++t)
      expect_close(to_torch(exe.get(gx, point(o, t))), grad_of(tx[o][t]),
                   what + " dx at " + std::to_string(o) + "," + std::to_string(t));
}

class AutodiffPatternTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(AutodiffPatternTest, MatchesAutograd) {
  auto [pattern, ndims, reduce_first] = GetParam();
  check_pattern(patterns()[pattern], ndims, reduce_first);
}

INSTANTIATE_TEST_SUITE_P(AllPatterns, AutodiffPatternTest,
                         ::testing::Combine(::testing::Range(0, 8), ::testing::Values(1, 2),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return patterns()[std::get<0>(info.param)].name + "_" +
                                  std::to_string(std::get<1>(info.param)) + "d" +
                                  (std::get<2>(info.param) ? "_reduced" : "_pointwise");
                         });

// s[0] = x[0];  s[t + 1] = 0.5 * s[t] + x[t];  total = sum_t sum(s[t]^2): a state cycle.
TEST(Autodiff, RecurrenceThroughMerge) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  const int64_t T = 7;
  RT x = source(ctx, {t}, {4});
  RT s = ctx.placeholder({DType::Float32, {4}}, {t}, "s");
  s[0] = x[0];
  s[t.var + 1] = s[t.var] * 0.5 + x;
  RT total = (s * s)[slice(0, t.bound)].sum();
  RT gx = grad(total, {x})[0].retain();
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();

  std::vector<torch::Tensor> tx;
  for (int64_t k = 0; k < T; ++k) tx.push_back(eager_source({k}, {4}).requires_grad_(true));
  torch::Tensor st = tx[0], ref = (st * st).sum();
  for (int64_t k = 1; k < T; ++k) {
    st = st * 0.5 + tx[k - 1];
    ref = ref + (st * st).sum();
  }
  ref.backward();
  for (int64_t k = 0; k < T; ++k)
    expect_close(to_torch(exe.get(gx, {k})), grad_of(tx[k]), "dx[" + std::to_string(k) + "]");
}

// The same recurrence, linear as in the brief: total = s[0:T].sum().
TEST(Autodiff, LinearRecurrenceSum) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  const int64_t T = 6;
  RT x = source(ctx, {t}, {3});
  RT s = ctx.placeholder({DType::Float32, {3}}, {t}, "s");
  s[0] = x[0];
  s[t.var + 1] = s[t.var] * 0.5 + x;
  RT total = s[slice(0, t.bound)].sum();
  RT gx = grad(total, {x})[0].retain();
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();
  std::vector<torch::Tensor> tx;
  for (int64_t k = 0; k < T; ++k) tx.push_back(eager_source({k}, {3}).requires_grad_(true));
  torch::Tensor st = tx[0], ref = st.sum();
  for (int64_t k = 1; k < T; ++k) {
    st = st * 0.5 + tx[k - 1];
    ref = ref + st.sum();
  }
  ref.backward();
  for (int64_t k = 0; k < T; ++k)
    expect_close(to_torch(exe.get(gx, {k})), grad_of(tx[k]), "dx[" + std::to_string(k) + "]");
}

// Parameters in a state cycle: p[0] = p0; p[i + 1] = p[i] - 0.1 * dloss[i]/dp[i]. The gradient
// w.r.t. p is local to each iteration (not through the update), as training needs.
TEST(Autodiff, ParameterStateCycleIsLocal) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  const int64_t I = 5;
  RT target = source(ctx, {i}, {3}, 7);
  RT p = ctx.placeholder({DType::Float32, {3}}, {i}, "p");
  RT diff = p - target;
  RT loss = (diff * diff).sum();
  RT gp = grad(loss, {p})[0];
  p[0] = ctx.zeros({3});
  p[i.var + 1] = p[i.var] - gp * 0.1;
  RT pv = p.retain(), gv = gp.retain();
  Executable exe = compile(ctx, {{i.bound, I}});
  exe.run();
  torch::Tensor pt = torch::zeros({3});
  for (int64_t k = 0; k < I; ++k) {
    torch::Tensor g = 2 * (pt - eager_source({k}, {3}, 7));
    expect_close(to_torch(exe.get(pv, {k})), pt, "p[" + std::to_string(k) + "]");
    expect_close(to_torch(exe.get(gv, {k})), g, "dp[" + std::to_string(k) + "]");
    pt = pt - 0.1 * g;
  }
}

// Training over iterations i of episodes t: p[i] is read by every step of episode i, so dp[i]
// sums over t; the update goes through the merge cycle without differentiating it.
TEST(Autodiff, ParametersPerIterationSumOverSteps) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  const int64_t I = 4, T = 5;
  RT x = source(ctx, {i, t}, {3}, 5);
  RT p = ctx.placeholder({DType::Float32, {3}}, {i}, "p");
  RT loss = (p * x).tanh().sum();  // over (i, t)
  RT gp = grad(loss, {p})[0];
  ASSERT_EQ(gp.domain().size(), 1u);
  p[0] = source(ctx, {}, {3}, 6);
  p[i.var + 1] = p[i.var] - gp * 0.1;
  RT gv = gp.retain();
  Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}});
  exe.run();
  torch::Tensor pt = eager_source({}, {3}, 6);
  for (int64_t k = 0; k < I; ++k) {
    torch::Tensor leaf = pt.clone().requires_grad_(true);
    torch::Tensor l = torch::zeros({});
    for (int64_t s = 0; s < T; ++s) l = l + (leaf * eager_source({k, s}, {3}, 5)).tanh().sum();
    l.backward();
    expect_close(to_torch(exe.get(gv, {k})), leaf.grad(), "dp[" + std::to_string(k) + "]");
    pt = pt - 0.1 * leaf.grad();
  }
}

// A loss that exists only at even steps (conditional execution): odd steps contribute nothing.
TEST(Autodiff, ConditionalLoss) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  const int64_t T = 6;
  RT x = source(ctx, {t}, {3}, 1);
  RT w = source(ctx, {}, {3}, 2);
  RT loss = (w * x)[t.var % 2 == 0].sin().sum();
  std::vector<RT> g = grad(loss, {w, x});
  RT gw = g[0].retain(), gx = g[1].retain();
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();
  torch::Tensor tw = eager_source({}, {3}, 2).requires_grad_(true);
  std::vector<torch::Tensor> tx;
  torch::Tensor ref = torch::zeros({});
  for (int64_t k = 0; k < T; ++k) {
    tx.push_back(eager_source({k}, {3}, 1).requires_grad_(true));
    if (k % 2 == 0) ref = ref + (tw * tx[k]).sin().sum();
  }
  ref.backward();
  expect_close(to_torch(exe.get(gw, {})), tw.grad(), "dw");
  for (int64_t k = 0; k < T; ++k)
    expect_close(to_torch(exe.get(gx, {k})), grad_of(tx[k]), "dx[" + std::to_string(k) + "]");
}

// A small classifier through matmul, add, tanh, log_softmax (max, exp, log, sum), gather and
// index_select, over time steps; the loss is reduced over time first.
TEST(Autodiff, MlpMatchesAutograd) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  const int64_t T = 5;
  RT x = source(ctx, {t}, {4}, 1);
  RT w1 = source(ctx, {}, {4, 8}, 2);
  RT b1 = source(ctx, {}, {8}, 3);
  RT w2 = source(ctx, {}, {8, 3}, 4);
  std::vector<int64_t> labels{0, 2, 1, 1, 0};
  RT lab = ctx.tensor(HostTensor::from(labels, {T})).index(0, t.var);  // int64 () over t
  RT h = (x.unsqueeze(0).matmul(w1) + b1).tanh();                       // [1, 8]
  RT logits = h.matmul(w2);                                             // [1, 3]
  RT lp = logits.log_softmax(-1);
  RT nll = -lp.gather(1, lab.reshape({1, 1})).sum();
  RT sel = lp.squeeze(0).index_select(0, lab.reshape({1})).sum();  // same as -nll
  RT loss = nll - sel * 0.5 + h.relu().sum() * 0.1;
  RT total = loss[slice(0, t.bound)].sum();
  std::vector<RT> g = grad(total, {w1, b1, w2});
  std::vector<RT> kept;
  for (RT& r : g) kept.push_back(r.retain());
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();

  torch::Tensor tw1 = eager_source({}, {4, 8}, 2).requires_grad_(true);
  torch::Tensor tb1 = eager_source({}, {8}, 3).requires_grad_(true);
  torch::Tensor tw2 = eager_source({}, {8, 3}, 4).requires_grad_(true);
  torch::Tensor ref = torch::zeros({});
  for (int64_t k = 0; k < T; ++k) {
    torch::Tensor th = (eager_source({k}, {4}, 1).unsqueeze(0).matmul(tw1) + tb1).tanh();
    torch::Tensor tl = torch::log_softmax(th.matmul(tw2), -1);
    torch::Tensor n = -tl.index({0, labels[k]});
    ref = ref + n - (-n) * 0.5 + th.relu().sum() * 0.1;
  }
  ref.backward();
  expect_close(to_torch(exe.get(kept[0], {})), tw1.grad(), "dw1");
  expect_close(to_torch(exe.get(kept[1], {})), tb1.grad(), "db1");
  expect_close(to_torch(exe.get(kept[2], {})), tw2.grad(), "dw2");
}

// Movement, reduction and elementwise rules on one point, against autograd.
// The episode-aware discounted sum against its eager definition (weights gamma^k, zero after
// the first done), values and gradients.
TEST(Autodiff, DiscountedSumMatchesAutograd) {
  Context ctx;
  RT a = source(ctx, {}, {5, 3}, 1);
  HostTensor d(DType::Float32, {5, 3});
  for (int64_t k : {4, 6, 8, 12}) d.set(k, 1.0);  // dones at (1, 1), (2, 0), (2, 2), (4, 0)
  RT done = ctx.tensor(d);
  RT y = (a.discounted_sum(0.9, done, 0) * a.index(0, 0) + a.discounted_sum(0.8, 1).sum()).retain();
  RT ga = grad(y.sum(), {a})[0].retain();
  Executable exe = compile(ctx, {});
  exe.run();

  torch::Tensor ta = eager_source({}, {5, 3}, 1).requires_grad_(true);
  torch::Tensor td = to_torch(d);
  torch::Tensor ended_before = td.cumsum(0) - td;
  torch::Tensor w = torch::pow(0.9, torch::arange(5, torch::kFloat32)).unsqueeze(1) *
                    (ended_before < 0.5).to(torch::kFloat32);
  torch::Tensor w1 = torch::pow(0.8, torch::arange(3, torch::kFloat32));
  torch::Tensor ty = (ta * w).sum(0) * ta.select(0, 0) + (ta * w1).sum(1).sum();
  ty.sum().backward();
  expect_close(to_torch(exe.get(y, {})), ty, "y");
  expect_close(to_torch(exe.get(ga, {})), ta.grad(), "da");
}

// Discounted cumulative sums in both directions, with and without episode ends, along dims 0
// and 1, against their recurrences computed by LibTorch with autograd.
TEST(Autodiff, DiscountedCumSumMatchesAutograd) {
  Context ctx;
  RT a = source(ctx, {}, {5, 3}, 1);
  HostTensor d(DType::Float32, {5, 3});
  for (int64_t k : {4, 6, 8, 12}) d.set(k, 1.0);
  RT done = ctx.tensor(d);
  RT w = source(ctx, {}, {5, 3}, 2);  // weights of the outputs in the loss
  std::vector<RT> ys = {a.discounted_cumsum(0.9, done, 0, true),
                        a.discounted_cumsum(0.8, done, 0, false),
                        a.discounted_cumsum(0.7, 1, true), a.discounted_cumsum(0.6, done, 1, false)};
  RT loss = (ys[0] * w).sum() + (ys[1] * w).sum() + (ys[2] * w).sum() + (ys[3] * w).sum();
  for (RT& y : ys) y = y.retain();
  RT ga = grad(loss, {a})[0].retain();
  Executable exe = compile(ctx, {});
  exe.run();

  torch::Tensor ta = eager_source({}, {5, 3}, 1).requires_grad_(true);
  torch::Tensor td = to_torch(d), tw = eager_source({}, {5, 3}, 2);
  // y[k] = x[k] + gamma (1 - cut) y[k -/+ 1], the cut at the earlier of the two positions.
  auto scan = [](const torch::Tensor& x, const torch::Tensor* done, double gamma, int64_t dim,
                 bool reverse) {
    const int64_t n = x.size(dim);
    std::vector<torch::Tensor> y(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) {
      int64_t k = reverse ? n - 1 - s : s, prev = reverse ? k + 1 : k - 1;
      y[k] = x.select(dim, k);
      if (s == 0) continue;
      torch::Tensor link = torch::ones_like(y[k]);
      if (done) link = (done->select(dim, reverse ? k : k - 1) < 0.5).to(torch::kFloat32);
      y[k] = y[k] + gamma * link * y[prev];
    }
    return torch::stack(y, dim);
  };
  std::vector<torch::Tensor> ty = {scan(ta, &td, 0.9, 0, true), scan(ta, &td, 0.8, 0, false),
                                   scan(ta, nullptr, 0.7, 1, true), scan(ta, &td, 0.6, 1, false)};
  torch::Tensor tloss = torch::zeros({});
  for (const torch::Tensor& y : ty) tloss = tloss + (y * tw).sum();
  tloss.backward();
  for (size_t k = 0; k < ys.size(); ++k)
    expect_close(to_torch(exe.get(ys[k], {})), ty[k], cat("y", k));
  expect_close(to_torch(exe.get(ga, {})), ta.grad(), "da");
}

TEST(Autodiff, OpSetMatchesAutograd) {
  Context ctx;
  RT a = source(ctx, {}, {2, 3}, 1);
  RT b = source(ctx, {}, {3}, 2);
  RT c = a * b + b.exp();                                      // broadcast
  RT d = c.permute({1, 0}).reshape({6}).slice(0, 1, 5).pad(0, 1, 2).flip(0);  // [7]
  RT e = cat({d, d.cumsum(0)}, 0);                             // [14]
  RT f = e.sigmoid() * (e.abs() + 1.0).sqrt() + (a.square() + 1.0).log().sum(0).max(0);
  RT m = a.maximum(b) / (b * b + 1.0) - a.minimum(0.2345).sin() + where(a > 0.0, a, b * 2.0);
  RT loss = f.sum() + m.mean() + a.index(1, 2).pow(2.0).sum() + a.expand({4, 2, 3}).cos().sum() +
            a.unsqueeze(0).squeeze(0).relu().var({1}).sum();
  std::vector<RT> g = grad(loss, {a, b});
  RT ga = g[0].retain(), gb = g[1].retain();
  Executable exe = compile(ctx, {});
  exe.run();

  torch::Tensor ta = eager_source({}, {2, 3}, 1).requires_grad_(true);
  torch::Tensor tb = eager_source({}, {3}, 2).requires_grad_(true);
  torch::Tensor tc = ta * tb + tb.exp();
  torch::Tensor td = tc.permute({1, 0}).reshape({6}).slice(0, 1, 5);
  td = torch::constant_pad_nd(td, {1, 2}, 0).flip(0);
  torch::Tensor te = torch::cat({td, td.cumsum(0)}, 0);
  torch::Tensor tf = te.sigmoid() * (te.abs() + 1).sqrt() + std::get<0>((ta.square() + 1).log().sum(0).max(0));
  torch::Tensor tm = torch::maximum(ta, tb) / (tb * tb + 1) - torch::clamp_max(ta, 0.2345).sin() +
                     torch::where(ta > 0, ta, tb * 2);
  torch::Tensor tl = tf.sum() + tm.mean() + ta.select(1, 2).pow(2).sum() +
                     ta.expand({4, 2, 3}).cos().sum() + (ta.relu() - ta.relu().mean(1, true)).square().mean(1).sum();
  tl.backward();
  expect_close(to_torch(exe.get(ga, {})), ta.grad(), "da");
  expect_close(to_torch(exe.get(gb, {})), tb.grad(), "db");
}

// detach() stops gradients; an unreachable wrt gets zeros of its type.
TEST(Autodiff, DetachAndUnreachable) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3}, 1);
  RT w = source(ctx, {}, {3}, 2);
  RT u = source(ctx, {}, {2}, 3);
  RT loss = (w * x).sum() + (w.detach() * x * 5.0).sum();
  std::vector<RT> g = grad(loss, {w, u});
  RT gw = g[0].retain(), gu = g[1].retain();
  EXPECT_EQ(gu.shape().rank(), 1u);
  Executable exe = compile(ctx, {{t.bound, 4}});
  exe.run();
  torch::Tensor ref = torch::zeros({3});
  for (int64_t k = 0; k < 4; ++k) ref += eager_source({k}, {3}, 1);
  expect_close(to_torch(exe.get(gw, {})), ref, "dw");
  expect_close(to_torch(exe.get(gu, {})), torch::zeros({2}), "du");
}

TEST(Autodiff, NonScalarLossNamesTheRt) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3});
  RT y = (x * 2.0).named("y");
  try {
    grad(y, {x});
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'y'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("autodiff_test.cpp"), std::string::npos) << msg;
    EXPECT_NE(msg.find("scalar"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tempo
