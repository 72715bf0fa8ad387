// The TopK op against torch::topk: per step inside a recurrence, and over the steps of a
// vectorized program (the passes batch it over t), values and indices.
#include <cstdlib>
#include <string>

#include "driver/compile.h"
#include "driver/executable_impl.h"
#include "e2e/e2e_util.h"

namespace tempo {
namespace {

using testing::eager_source;
using testing::expect_close;
using testing::source;
using testing::to_torch;

bool passes_on() { return std::getenv("TEMPO_NO_PASS") == nullptr; }

// Nothing reads the previous step: vectorized along t when the passes run.
TEST(TopK, MatchesTorchAndIsVectorized) {
  const int64_t T = 6;
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {4, 10});
  auto [v, i] = (x * 2.0).topk(3);
  auto [v0, i0] = x.topk(2, 0);
  // A retained op stays per step: what is kept is computed from the TopK outputs.
  RT values = (v - 1.0).retain(), indices = (i + 1).retain();
  RT values0 = (v0 - 1.0).retain(), indices0 = (i0 + 1).retain();
  CompileOptions o;
  o.passes.fusion = false;  // the TopK ops stay visible in the optimized graph
  Executable exe = compile(ctx, {{t.bound, T}}, o);
  exe.run();
  for (int64_t s = 0; s < T; ++s) {
    torch::Tensor xs = eager_source({s}, {4, 10});
    auto want = (xs * 2).topk(3);
    auto want0 = xs.topk(2, 0);
    const std::string at = " at step " + std::to_string(s);
    expect_close(to_torch(exe.get(values, {s})), std::get<0>(want) - 1, "values" + at);
    expect_close(to_torch(exe.get(indices, {s})), std::get<1>(want).to(torch::kFloat32) + 1,
                 "indices" + at);
    expect_close(to_torch(exe.get(values0, {s})), std::get<0>(want0) - 1, "dim-0 values" + at);
    expect_close(to_torch(exe.get(indices0, {s})), std::get<1>(want0).to(torch::kFloat32) + 1,
                 "dim-0 indices" + at);
  }
  if (passes_on()) {  // every TopK runs once over all steps, its dim shifted past the new one
    int n = 0;
    for (const ir::OpNode& op : exe.impl().graph.ops())
      if (op.kind == ir::OpKind::TopK) {
        ++n;
        EXPECT_TRUE(op.domain.empty()) << op.describe();
        EXPECT_TRUE(op.outputs[0].shape[0].same(t.bound)) << op.outputs[0].str();
        EXPECT_TRUE(op.attrs.ints[0] == 1 || op.attrs.ints[0] == 2) << op.attrs.ints[0];
      }
    EXPECT_EQ(n, 2);
  }
}

// s[0] = x[0]; s[t + 1] = 0.5 s[t] + mean of the top 3 of s[t] (a TopK inside the cycle).
TEST(TopK, InsideARecurrence) {
  const int64_t T = 5;
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2, 6});
  RT s = ctx.placeholder({DType::Float32, {2, 6}}, {t}, "s");
  s[0] = x[0];
  auto [top, where_top] = s[t.var].topk(3);
  s[t.var + 1] = s[t.var] * 0.5 + top.mean(-1, true) +
                  where_top.cast(DType::Float32).sum(-1, true) * 0.01;
  RT out = s.retain();
  Executable exe = compile(ctx, {{t.bound, T}});
  exe.run();
  torch::Tensor ref = eager_source({0}, {2, 6});
  for (int64_t k = 0; k < T; ++k) {
    expect_close(to_torch(exe.get(out, {k})), ref, "s[" + std::to_string(k) + "]");
    auto [tv, ti] = ref.topk(3);
    ref = ref * 0.5 + tv.mean(-1, true) + ti.to(torch::kFloat32).sum(-1, true) * 0.01;
  }
}

}  // namespace
}  // namespace tempo
