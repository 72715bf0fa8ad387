// Programs reading a source with every dependence pattern of TEMPO Fig. 2, over one, two and
// three temporal dimensions, checked against LibTorch eager computations of the same thing.
#include <cstdlib>
#include <functional>
#include <string>

#include "backend/torch_value.h"
#include "driver/compile.h"
#include "driver/executable_impl.h"
#include "e2e/e2e_util.h"

namespace tempo {
namespace {

using testing::eager_source;
using testing::expect_close;
using testing::source;
using testing::to_torch;

struct Pattern {
  std::string name;
  std::function<Expr(const Expr& t, const Expr& T)> phi;
  // Source timesteps read at sink timestep t (in order), for bound T.
  std::function<std::vector<int64_t>(int64_t t, int64_t T)> reads;
};

std::vector<int64_t> range(int64_t a, int64_t b) {
  std::vector<int64_t> r;
  for (int64_t k = a; k < b; ++k) r.push_back(k);
  return r;
}

const int64_t kW = 3;  // window size

std::vector<Pattern> patterns() {
  return {
      {"identity", [](auto& t, auto&) { return t; }, [](int64_t t, int64_t) { return range(t, t + 1); }},
      {"const_range_0_8", [](auto&, auto&) { return sym::slice(0, 8); },
       [](int64_t, int64_t) { return range(0, 8); }},
      {"all_0_T", [](auto&, auto& T) { return sym::slice(0, T); },
       [](int64_t, int64_t T) { return range(0, T); }},
      {"past_0_t1", [](auto& t, auto&) { return sym::slice(0, t + 1); },
       [](int64_t t, int64_t) { return range(0, t + 1); }},
      {"future_t_T", [](auto& t, auto& T) { return sym::slice(t, T); },
       [](int64_t t, int64_t T) { return range(t, T); }},
      {"past_window", [](auto& t, auto&) { return sym::slice(max(0, t - kW), t + 1); },
       [](int64_t t, int64_t) { return range(std::max<int64_t>(0, t - kW), t + 1); }},
      {"future_window", [](auto& t, auto& T) { return sym::slice(t, min(t + kW, T)); },
       [](int64_t t, int64_t T) { return range(t, std::min(t + kW, T)); }},
  };
}

// Runs y = 2 * sum(x[outer..., phi(t)]) + 1 (no sum for a point pattern) over `ndims` temporal
// dimensions (b, i, t: the pattern applies to t) and compares every point with eager LibTorch.
void check_pattern(const Pattern& p, int ndims) {
  Context ctx;
  Dims all;
  if (ndims >= 3) all.push_back(ctx.dim("b", "B"));
  if (ndims >= 2) all.push_back(ctx.dim("i", "I"));
  Dim tdim = ctx.dim("t", "T");
  all.push_back(tdim);
  const int64_t T = 10, I = 3, B = 2;

  RT x = source(ctx, all, {2, 3});
  std::vector<Expr> idx;
  for (size_t k = 0; k + 1 < all.size(); ++k) idx.push_back(all[k].var);
  Expr e = p.phi(tdim.var, tdim.bound);
  idx.push_back(e);
  RT read = x[seq(idx)];
  RT y = (e.is_slice() ? read.sum(0) : read) * 2.0 + 1.0;
  y = y.retain();

  Bounds bounds{{tdim.bound, T}};
  if (ndims >= 2) bounds.push_back({all[ndims - 2].bound, I});
  if (ndims >= 3) bounds.push_back({all[0].bound, B});
  Executable exe = compile(ctx, bounds);
  exe.run();

  std::vector<int64_t> outer_sizes = ndims == 1   ? std::vector<int64_t>{}
                                     : ndims == 2 ? std::vector<int64_t>{I}
                                                  : std::vector<int64_t>{B, I};
  int64_t outer_total = 1;
  for (int64_t s : outer_sizes) outer_total *= s;
  for (int64_t o = 0; o < outer_total; ++o) {
    std::vector<int64_t> outer;
    int64_t rem = o;
    for (auto it = outer_sizes.rbegin(); it != outer_sizes.rend(); ++it) {
      outer.insert(outer.begin(), rem % *it);
      rem /= *it;
    }
    for (int64_t t = 0; t < T; ++t) {
      torch::Tensor expected = torch::zeros({2, 3});
      std::vector<int64_t> reads = p.reads(t, T);
      for (int64_t s : reads) {
        std::vector<int64_t> pt = outer;
        pt.push_back(s);
        expected += eager_source(pt, {2, 3});
      }
      expected = expected * 2 + 1;
      std::vector<int64_t> pt = outer;
      // A constant pattern (0:8, 0:T) removes t from y's domain (TEMPO §3).
      if (y.domain().size() == all.size()) pt.push_back(t);
      expect_close(to_torch(exe.get(y, pt)), expected,
                   p.name + " ndims=" + std::to_string(ndims) + " t=" + std::to_string(t));
    }
  }
}

class PatternTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(PatternTest, MatchesEager) {
  auto [pattern, ndims] = GetParam();
  check_pattern(patterns()[pattern], ndims);
}

INSTANTIATE_TEST_SUITE_P(AllPatterns, PatternTest,
                         ::testing::Combine(::testing::Range(0, 7), ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           return patterns()[std::get<0>(info.param)].name + "_" +
                                  std::to_string(std::get<1>(info.param)) + "d";
                         });

// A sink that varies with fewer dimensions than its source: z[i] = sum over x[i, 0:T].
TEST(Patterns, ReductionOverTimeRemovesDimension) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT x = source(ctx, {i, t}, {3});
  RT z = x[{i.var, slice(0, t.bound)}].sum(0).retain();
  EXPECT_EQ(z.domain().size(), 1u);
  Executable exe = compile(ctx, {{i.bound, 4}, {t.bound, 5}});
  exe.run();
  for (int64_t ii = 0; ii < 4; ++ii) {
    torch::Tensor expected = torch::zeros({3});
    for (int64_t tt = 0; tt < 5; ++tt) expected += eager_source({ii, tt}, {3});
    expect_close(to_torch(exe.get(z, {ii})), expected, "z");
  }
}

// A sink with more dimensions than its source: y[i, t] = x[t] * w[i].
TEST(Patterns, DomainsUnion) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3}, 1);
  RT w = source(ctx, {i}, {3}, 2);
  RT y = (x * w).retain();
  ASSERT_EQ(y.domain().size(), 2u);
  Executable exe = compile(ctx, {{i.bound, 3}, {t.bound, 4}});
  exe.run();
  for (int64_t ii = 0; ii < 3; ++ii)
    for (int64_t tt = 0; tt < 4; ++tt)
      expect_close(to_torch(exe.get(y, {ii, tt})),
                   eager_source({tt}, {3}, 1) * eager_source({ii}, {3}, 2), "y");
}

// Block stores (TEMPO §6): prefixes and suffixes that move with t are views of one block per
// i; the values equal those of point stores and of eager maxima, and the source itself is read
// back per point from its rows. A source also read through a sliding window keeps a point store.
TEST(Patterns, BlockStoresMatchPointStores) {
  if (std::getenv("TEMPO_NO_BLOCK_STORES")) GTEST_SKIP() << "block stores are switched off";
  const int64_t I = 2, T = 7;
  for (bool blocks : {true, false}) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = source(ctx, {i, t}, {3}).retain();
    RT w = source(ctx, {i, t}, {3}, 1);
    RT past = x[{i.var, slice(0, t.var + 1)}].max(0).retain();
    RT future = x[{i.var, slice(t.var, t.bound)}].max(0).retain();
    RT all = x[{i.var, slice(0, t.bound)}].max(0).retain();
    RT window = w[{i.var, slice(max(0, t.var - 2), t.var + 1)}].max(0).retain();
    RT w_past = w[{i.var, slice(0, t.var + 1)}].max(0).retain();  // with a prefix: point store
    CompileOptions o;
    o.block_stores = blocks;
    Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}}, o);
    exe.run();
    const runtime::Executor& ex = *exe.impl().executor;
    EXPECT_EQ(ex.store(exe.impl().op_map[x.op()], 0)->blocked(), blocks);
    EXPECT_FALSE(ex.store(exe.impl().op_map[w.op()], 0)->blocked());
    auto max_of = [](int64_t a, int64_t from, int64_t to, uint64_t salt) {
      std::vector<torch::Tensor> xs;
      for (int64_t k = from; k < to; ++k) xs.push_back(eager_source({a, k}, {3}, salt));
      return std::get<0>(torch::stack(xs).max(0));
    };
    const std::string what = blocks ? "block store" : "point store";
    for (int64_t a = 0; a < I; ++a) {
      expect_close(to_torch(exe.get(all, {a})), max_of(a, 0, T, 0), what + " all");
      for (int64_t k = 0; k < T; ++k) {
        expect_close(to_torch(exe.get(x, {a, k})), eager_source({a, k}, {3}), what + " x");
        expect_close(to_torch(exe.get(past, {a, k})), max_of(a, 0, k + 1, 0), what + " past");
        expect_close(to_torch(exe.get(future, {a, k})), max_of(a, k, T, 0), what + " future");
        expect_close(to_torch(exe.get(window, {a, k})),
                     max_of(a, std::max<int64_t>(0, k - 2), k + 1, 1), what + " window");
        expect_close(to_torch(exe.get(w_past, {a, k})), max_of(a, 0, k + 1, 1), what + " w");
      }
    }
  }
}

// A K/V cache: points (2, 3, 4) read as a growing prefix and as a sliding window, each through
// a permute that moves the steps next to the last dim. Their blocks lay the steps there (row
// axis 2, each (a, b)'s steps one run), a prefix read without a permute keeps the steps leading,
// and the values equal point stores' and eager attention's.
TEST(Patterns, BlockRowsLieWhereTheirReadersPermuteThem) {
  if (std::getenv("TEMPO_NO_BLOCK_STORES")) GTEST_SKIP() << "block stores are switched off";
  const int64_t T = 11;
  for (bool blocks : {true, false}) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT k = source(ctx, {t}, {2, 3, 4}, 1), v = source(ctx, {t}, {2, 3, 4}, 2);
    RT q = source(ctx, {t}, {2, 3, 1, 4}, 3), u = source(ctx, {t}, {2, 3, 4}, 4);
    RT scores = q.matmul(k[{slice(0, t.var + 1)}].permute({1, 2, 3, 0})).softmax(-1);
    RT attended = scores.matmul(k[{slice(0, t.var + 1)}].permute({1, 2, 0, 3})).retain();
    RT window = v[{slice(max(0, t.var - 3), t.var + 1)}].permute({1, 2, 3, 0}).sum(-1).retain();
    RT total = u[{slice(0, t.var + 1)}].sum(0).retain();
    CompileOptions o;
    o.block_stores = blocks;
    Executable exe = compile(ctx, {{t.bound, T}}, o);
    exe.run();
    const runtime::Executor& ex = *exe.impl().executor;
    auto store = [&](const RT& x) { return ex.store(exe.impl().op_map[x.op()], 0); };
    EXPECT_EQ(store(k)->blocked(), blocks);
    EXPECT_EQ(store(v)->window() > 0, blocks);
    EXPECT_EQ(store(u)->blocked(), blocks);
    if (blocks) {
      EXPECT_EQ(store(k)->row_axis(), 2);
      EXPECT_EQ(store(v)->row_axis(), 2);
      EXPECT_EQ(store(u)->row_axis(), 0);
    }
    auto points = [](int64_t from, int64_t to, std::vector<int64_t> shape, uint64_t salt) {
      std::vector<torch::Tensor> xs;
      for (int64_t s = from; s < to; ++s) xs.push_back(eager_source({s}, shape, salt));
      return torch::stack(xs);
    };
    const std::string what = blocks ? "block store" : "point store";
    for (int64_t s = 0; s < T; ++s) {
      const torch::Tensor ks = points(0, s + 1, {2, 3, 4}, 1);
      const torch::Tensor p =
          eager_source({s}, {2, 3, 1, 4}, 3).matmul(ks.permute({1, 2, 3, 0})).softmax(-1);
      expect_close(to_torch(exe.get(attended, {s})), p.matmul(ks.permute({1, 2, 0, 3})),
                   cat(what, " attention at ", s));
      expect_close(to_torch(exe.get(window, {s})),
                   points(std::max<int64_t>(0, s - 3), s + 1, {2, 3, 4}, 2).sum(0),
                   cat(what, " window at ", s));
      expect_close(to_torch(exe.get(total, {s})), points(0, s + 1, {2, 3, 4}, 4).sum(0),
                   cat(what, " prefix at ", s));
    }
  }
}

// Window stores (TEMPO §6): an output read only through windows of at most W points that slide
// with t (past windows, and future ones as n-step returns read them) keeps rolling blocks of 2W
// rows; each window is a view where it lies in the current block, a stack otherwise. Values
// equal those of point stores and of eager maxima over a dimension several blocks long.
TEST(Patterns, WindowStoresMatchPointStores) {
  if (std::getenv("TEMPO_NO_BLOCK_STORES")) GTEST_SKIP() << "block stores are switched off";
  const int64_t I = 2, T = 23;
  for (bool blocks : {true, false}) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT v = source(ctx, {i, t}, {3}, 3), u = source(ctx, {i, t}, {3}, 4);
    RT past = v[{i.var, slice(max(0, t.var - 3), t.var + 1)}].max(0).retain();
    RT future = u[{i.var, slice(t.var, min(t.var + 3, t.bound))}].max(0).retain();
    CompileOptions o;
    o.block_stores = blocks;
    Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}}, o);
    exe.run();
    const runtime::Executor& ex = *exe.impl().executor;
    EXPECT_EQ(ex.store(exe.impl().op_map[v.op()], 0)->blocked(), blocks);
    EXPECT_EQ(ex.store(exe.impl().op_map[u.op()], 0)->blocked(), blocks);
    auto max_of = [](int64_t a, int64_t from, int64_t to, uint64_t salt) {
      std::vector<torch::Tensor> xs;
      for (int64_t k = from; k < to; ++k) xs.push_back(eager_source({a, k}, {3}, salt));
      return std::get<0>(torch::stack(xs).max(0));
    };
    const std::string what = blocks ? "window store" : "point store";
    for (int64_t a = 0; a < I; ++a)
      for (int64_t k = 0; k < T; ++k) {
        expect_close(to_torch(exe.get(past, {a, k})), max_of(a, std::max<int64_t>(0, k - 3), k + 1, 3),
                     cat(what, " past at ", k));
        expect_close(to_torch(exe.get(future, {a, k})), max_of(a, k, std::min(k + 3, T), 4),
                     cat(what, " future at ", k));
      }
  }
}

// A long run of small points (a replay buffer's transitions) in a block store and in a window
// store, every point kept: the stores hold their blocks, not a view per point (a view's ~0.5 KiB
// was 10-30x the data of such a point), and every point still reads back its value, those a
// window store's blocks rolled past too.
TEST(Patterns, BlockStoresKeepNoViewPerPoint) {
  if (std::getenv("TEMPO_NO_BLOCK_STORES")) GTEST_SKIP() << "block stores are switched off";
  const int64_t T = 600;
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3}, 1).retain(), v = source(ctx, {t}, {2}, 2).retain();
  RT prefix = x[{slice(0, t.var + 1)}].max(0).retain();  // maxima: sums would become scans
  RT window = v[{slice(max(0, t.var - 3), t.var + 1)}].max(0).retain();
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();
  const runtime::Executor& ex = *exe.impl().executor;
  ASSERT_TRUE(ex.store(exe.impl().op_map[x.op()], 0)->blocked());
  ASSERT_GT(ex.store(exe.impl().op_map[v.op()], 0)->window(), 0);
  // Tensors sharing the block's storage: the block, the last row's view and this read.
  const runtime::ValuePtr stored = ex.read(exe.impl().op_map[x.op()], 0, {T / 2});
  EXPECT_LE(backend::tensor_of(stored).storage().use_count(), 4);
  torch::Tensor most = eager_source({0}, {3}, 1);
  for (int64_t k = 0; k < T; ++k) {
    expect_close(to_torch(exe.get(x, {k})), eager_source({k}, {3}, 1), cat("x at ", k));
    expect_close(to_torch(exe.get(v, {k})), eager_source({k}, {2}, 2), cat("v at ", k));
    most = torch::maximum(most, eager_source({k}, {3}, 1));
    torch::Tensor recent = eager_source({k}, {2}, 2);
    for (int64_t j = std::max<int64_t>(0, k - 3); j < k; ++j)
      recent = torch::maximum(recent, eager_source({j}, {2}, 2));
    expect_close(to_torch(exe.get(prefix, {k})), most, cat("prefix at ", k));
    expect_close(to_torch(exe.get(window, {k})), recent, cat("window at ", k));
  }
}

}  // namespace
}  // namespace tempo
