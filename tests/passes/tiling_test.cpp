// Tiling (passes/tiling.cpp): the SDG after tiling a window, attention over growing and sliding
// windows and a learner over a rollout (values and gradients) against LibTorch eager with tiles
// of several sizes, the windows left whole, and bad tile options.
#include "driver/compile.h"
#include "passes/tiling.h"
#include "passes/dce.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "api/autodiff.h"
#include "api/tempo.h"
#include "driver/executable_impl.h"
#include "e2e/e2e_util.h"
#include "passes/pass_test_util.h"

namespace tempo {
namespace {

using testing::eager_source;
using testing::expect_close;
using testing::source;
using testing::text;
using testing::to_torch;

// Runs tiling with tiles of `size` along t, then dead-code elimination (the untiled ops nothing
// reads any more go); the text after them (validated).
std::string tiled(const Context& ctx, int64_t size, bool expect_change = true) {
  passes::Program p(ctx.graph(), ctx.retained());
  p.options.tiles = {{"t", size}};
  EXPECT_EQ(passes::tile_windows(p), expect_change);
  passes::eliminate_dead_code(p);
  ir::validate(p.graph);
  return text(p.graph);
}

int tiled_ops(const ir::Graph& g) {
  int n = 0;
  for (const ir::OpNode& op : g.ops())
    for (const Dim& d : op.domain) n += d.name() == "n_t";
  return n;
}

// ---- the SDG after tiling ----------------------------------------------------------------------

// The window's readers run per tile (n_t) where the tile overlaps it; the sum of the window is a
// partial sum per tile and a sum over the tiles the window overlaps.
TEST(Tile, WindowSumIsASumOfTileSums) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT y = (x[slice(0, t.var + 1)] * 2.0).sum(0).retain();
  (void)y;
  EXPECT_EQ(tiled(ctx, 4),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Const() {scalar=2, dtype=f32} : f32()\n"
            "%2 = Mul(%0[4*n_t:min(t + 1, 4*n_t + 4)], %1[]) : f32(min(t + 1, 4*n_t + 4) - 4*n_t, "
            "2) over (t, n_t) where 4*n_t < t + 1\n"
            "%3 = Sum(%2[t, n_t]) {ints=[0]} : f32(2) over (t, n_t) where 4*n_t < t + 1\n"
            "%4 = Sum(%3[t, 0:t // 4 + 1]) {ints=[0]} : f32(2) over (t)\n");
}

// ---- values against eager ------------------------------------------------------------------------

// One head of attention at step t over keys and values k[w(t)], v[w(t)]: scores, softmax,
// weighted sum.
RT attention(const RT& q, const RT& k, const RT& v, const Dim& t, const Expr& from) {
  Expr window = slice(from, t.var + 1);
  RT scores = q[t.var].unsqueeze(0).matmul(k[window].transpose(0, 1)) * 0.5;
  return scores.softmax(1).matmul(v[window]).squeeze(0);
}

torch::Tensor eager_attention(int64_t t, int64_t from) {
  std::vector<torch::Tensor> ks, vs;
  for (int64_t s = from; s <= t; ++s) {
    ks.push_back(eager_source({s}, {3}, 1));
    vs.push_back(eager_source({s}, {3}, 2));
  }
  torch::Tensor q = eager_source({t}, {3}, 0).unsqueeze(0);
  torch::Tensor scores = q.matmul(torch::stack(ks).t()) * 0.5;
  return scores.softmax(1).matmul(torch::stack(vs)).squeeze(0);
}

void check_attention(int64_t tile, int64_t w, bool static_tiles = false) {
  const int64_t T = 11;
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT q = source(ctx, {t}, {3}, 0), k = source(ctx, {t}, {3}, 1), v = source(ctx, {t}, {3}, 2);
  RT y = attention(q, k, v, t, w > 0 ? max(0, t.var - w) : Expr(0)).retain();
  CompileOptions o;
  o.passes.check_ir = true;
  if (tile > 0) o.passes.tiles = {{"t", tile}};
  o.passes.static_tiles = static_tiles;
  Executable exe = compile(ctx, {{t.bound, T}}, o);
  exe.run();
  std::string what = cat("tile ", tile, ", window ", w, static_tiles ? ", static" : "");
  if (tile > 0) EXPECT_GT(tiled_ops(exe.impl().graph), 0) << what;
  if (static_tiles)  // every tiled op has one shape
    for (const ir::OpNode& op : exe.impl().graph.ops())
      if (!op.domain.empty() && op.domain.back().name() == "n_t")
        for (const ir::TensorType& type : op.outputs)
          EXPECT_TRUE(type.shape.is_static()) << what << ": " << op.describe() << " " << type.str();
  for (int64_t s = 0; s < T; ++s)
    expect_close(to_torch(exe.get(y, {s})), eager_attention(s, w > 0 ? std::max<int64_t>(0, s - w) : 0),
                 cat(what, " at t = ", s));
}

TEST(Tile, CausalAttentionMatchesEager) {
  for (int64_t tile : {0, 1, 3, 4, 11}) check_attention(tile, 0);
}

TEST(Tile, SlidingWindowAttentionMatchesEager) {
  for (int64_t tile : {2, 4}) check_attention(tile, 5);
}

// Static tiles: the first and last tile padded to the tile size, the padding masked out of the
// max, the sum and the weighted sum.
TEST(Tile, StaticTilesMatchEager) {
  for (int64_t tile : {1, 3, 4}) check_attention(tile, 0, true);
  check_attention(4, 5, true);
}

// A learner over a rollout read whole, obs[i, 0:T] flattened to T * B rows, with SGD on its
// weights over iterations i: tiling along t runs it T / Z tiles at a time and sums the weight
// gradients of the tiles (gradient accumulation).
TEST(Tile, RolloutLearnerAccumulatesGradients) {
  const int64_t I = 3, T = 10, B = 2;
  for (int64_t tile : {0, 3, 5}) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = source(ctx, {i, t}, {B, 3}), r = source(ctx, {i, t}, {B}, 7);
    RT w = ctx.placeholder({DType::Float32, {3, 4}}, {i}, "w");
    // Observations made with the iteration's weights (acting), so the rollout is per iteration.
    RT obs = x * (w.sum().tanh().detach() * 0.01 + 1.0);
    RT rows = obs[{i.var, slice(0, t.bound)}].reshape({t.bound * B, 3});
    RT weights = r[{i.var, slice(0, t.bound)}].reshape({t.bound * B, 1});
    RT loss = ((rows.matmul(w).tanh() * weights).sum() / double(T * B)).retain();
    RT dw = grad(loss, {w})[0].retain();
    w[0] = source(ctx, {}, {3, 4}, 9);
    w[i.var + 1] = w[i.var] - dw * 0.5;
    CompileOptions o;
    o.passes.check_ir = true;
    if (tile > 0) o.passes.tiles = {{"t", tile}};
    o.passes.verbose = true;
    Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}}, o);
    exe.run();
    if (tile > 0) EXPECT_GT(tiled_ops(exe.impl().graph), 0) << "tile " << tile;
    torch::Tensor W = eager_source({}, {3, 4}, 9);
    for (int64_t k = 0; k < I; ++k) {
      std::vector<torch::Tensor> xs, rs;
      for (int64_t s = 0; s < T; ++s) {
        xs.push_back(eager_source({k, s}, {B, 3}) * (W.sum().tanh() * 0.01 + 1.0));
        rs.push_back(eager_source({k, s}, {B}, 7));
      }
      torch::Tensor leaf = W.clone().requires_grad_(true);
      torch::Tensor L = (torch::stack(xs).reshape({T * B, 3}).matmul(leaf).tanh() *
                         torch::stack(rs).reshape({T * B, 1}))
                            .sum() /
                        double(T * B);
      L.backward();
      std::string what = cat("tile ", tile, " at i = ", k);
      expect_close(to_torch(exe.get(loss, {k})), L.detach(), what);
      expect_close(to_torch(exe.get(dw, {k})), leaf.grad(), what + " (gradient)");
      W = W - 0.5 * leaf.grad();
    }
  }
}

// Tiled for memory (PassOptions::interleave), a weight gradient of 64 KiB accumulates over the
// tiles as they run: two partials at a time instead of all eight, with the same values.
TEST(Tile, InterleavedTilesAccumulateLargeGradients) {
  const int64_t I = 2, T = 32, B = 2, K = 128;
  const int64_t partial = K * K * 4, tiles = T / 4;
  int64_t peak[2] = {0, 0};
  for (bool interleave : {false, true}) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = source(ctx, {i, t}, {B, K});
    RT w = ctx.placeholder({DType::Float32, {K, K}}, {i}, "w");
    RT obs = x * (w.sum().tanh().detach() * 0.01 + 1.0);
    RT rows = obs[{i.var, slice(0, t.bound)}].reshape({t.bound * B, K});
    RT loss = (rows.matmul(w).tanh().sum() / double(T * B)).retain();
    RT dw = grad(loss, {w})[0].retain();
    w[0] = source(ctx, {}, {K, K}, 9) * 0.1;
    w[i.var + 1] = w[i.var] - dw * 0.5;
    CompileOptions o;
    o.passes.check_ir = true;
    o.passes.tiles = {{"t", 4}};
    o.passes.interleave = interleave;
    Executable exe = compile(ctx, {{i.bound, I}, {t.bound, T}}, o);
    exe.run();
    peak[interleave] = exe.memory().peak_bytes;
    torch::Tensor W = eager_source({}, {K, K}, 9) * 0.1;
    for (int64_t k = 0; k < I; ++k) {
      std::vector<torch::Tensor> xs;
      for (int64_t s = 0; s < T; ++s)
        xs.push_back(eager_source({k, s}, {B, K}) * (W.sum().tanh() * 0.01 + 1.0));
      torch::Tensor leaf = W.clone().requires_grad_(true);
      torch::Tensor L = torch::stack(xs).reshape({T * B, K}).matmul(leaf).tanh().sum() /
                        double(T * B);
      L.backward();
      const std::string what = cat(interleave ? "interleaved" : "summed once", " at i = ", k);
      expect_close(to_torch(exe.get(loss, {k})), L.detach(), what);
      expect_close(to_torch(exe.get(dw, {k})), leaf.grad(), what + " (gradient)");
      W = W - 0.5 * leaf.grad();
    }
  }
  EXPECT_GE(peak[0] - peak[1], (tiles - 3) * partial) << peak[0] << " vs " << peak[1];
}

// Without tile sizes, a window whose stack can exceed `tile_above_bytes` is tiled with the
// largest power-of-two tile under it: rows of 256 bytes, 64 of them; 4 KiB -> tiles of 16.
TEST(Tile, LargeWindowsAreTiledAutomatically) {
  const int64_t T = 64;
  for (int64_t limit : {int64_t{0}, int64_t{4096}, int64_t{1} << 20}) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = source(ctx, {i, t}, {64});
    RT state = ctx.placeholder({DType::Float32, {64}}, {i}, "state");
    RT y = (x[{i.var, slice(0, t.bound)}] * state).tanh().sum(0);
    state[0] = source(ctx, {}, {64}, 3);
    state[i.var + 1] = state[i.var] * 0.5 + y * 0.01;
    RT out = y.retain();
    CompileOptions o;
    o.passes.tile_above_bytes = limit;
    o.passes.check_ir = true;
    Executable exe = compile(ctx, {{i.bound, 3}, {t.bound, T}}, o);
    exe.run();
    int tiles = 0;
    for (const ir::Edge& e : exe.impl().graph.edges())
      for (const Expr& a : e.phi.args())
        tiles += a.is_slice() && a.str().find("16*n_t") != std::string::npos;
    EXPECT_EQ(tiles > 0, limit == 4096) << "limit " << limit;
    torch::Tensor st = eager_source({}, {64}, 3);
    for (int64_t k = 0; k < 3; ++k) {
      std::vector<torch::Tensor> xs;
      for (int64_t s = 0; s < T; ++s) xs.push_back(eager_source({k, s}, {64}));
      torch::Tensor want = (torch::stack(xs) * st).tanh().sum(0);
      expect_close(to_torch(exe.get(out, {k})), want, cat("limit ", limit, " at i = ", k));
      st = st * 0.5 + want * 0.01;
    }
  }
}

// ---- windows left whole, bad options ----------------------------------------------------------

// A window read whole by a user function, or whose maximum's position is read, stays as it is.
TEST(Tile, WindowsThatCannotBeTiledStayWhole) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT m = (x[slice(0, t.var + 1)] + 1.0).argmax(0).retain();
  (void)m;
  auto keep = [](const std::vector<HostTensor>& in, const std::vector<int64_t>&) { return in; };
  ctx.udf("sink", keep, {x[slice(0, t.var + 1)] * 3.0}, {TensorType{DType::Float32, {t.var + 1, 2}}},
          {t});
  std::string before = text(ctx.graph());
  EXPECT_EQ(tiled(ctx, 2, false), before);
}

TEST(Tile, BadTileOptionsAreUserErrors) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT y = (x[slice(0, t.var + 1)] * 2.0).sum(0).retain();
  (void)y;
  auto fails = [&](std::vector<std::pair<std::string, int64_t>> tiles, const std::string& says) {
    CompileOptions o;
    o.passes.tiles = tiles;
    try {
      compile(ctx, {{t.bound, 8}}, o);
      ADD_FAILURE() << "no error for " << says;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  fails({{"s", 4}}, "no such dimension");
  fails({{"t", 0}}, "at least 1");
  fails({{"t", 9}}, "exceeds");
}

}  // namespace
}  // namespace tempo
