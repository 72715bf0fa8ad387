// Rewrites of Tempo's own programs: regions of the optimized SDG go to a policy as rewrite graphs
// and come back as ops; the program computes the same values with and without them.
#include "rewrite/program_rewrites.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "expect_error.h"
#include "driver/executable_impl.h"
#include "rewrite/subst.h"

namespace tempo::rewrite {
namespace {

// A policy that merges the first two matmuls reading one input (TASO's merge_matmul_shared_input).
RewritePolicy merge_first_matmuls(int* calls) {
  return [calls](const RewriteRegion& region) -> std::optional<RewriteRegion> {
    ++*calls;
    const Graph g = to_graph(region);
    for (const Match& m : all_matches(g))
      if (m.rule == rule_index("merge_matmul_shared_input")) {
        RewriteRegion r = to_region(apply(g, m));
        r.where = region.where;
        return r;
      }
    return std::nullopt;
  };
}

struct Result {
  std::vector<double> values;
  int matmuls = 0;
  int concats_per_iteration = 0, concats_per_step = 0;  // over (i) and over (i, t)
};

// An actor-critic's first layers: per step, two matmuls read the same observations with
// weights that change per iteration.
Result run_program(const RewritePolicy& policy, bool vectorize, int64_t rows = 4) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT x = ctx.rand_normal({rows, 3}, {i, t});
  RT w1 = ctx.rand_normal({3, 5}, {i}), w2 = ctx.rand_normal({3, 6}, {i});
  RT out = (x.matmul(w1).tanh().sum() + x.matmul(w2).tanh().sum()).retain();
  CompileOptions o;
  o.passes.vectorize = vectorize;
  o.passes.check_ir = true;
  o.passes.rewrite_policy = policy;
  Executable exe = compile(ctx, {{i.bound, 2}, {t.bound, 3}}, o);
  exe.run();
  Result r;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b) r.values.push_back(exe.get(out, {a, b}).to_vector().at(0));
  std::function<void(const ir::Graph&)> count = [&](const ir::Graph& g) {
    for (const ir::OpNode& op : g.ops()) {
      if (op.kind == ir::OpKind::Fused) count(op.attrs.region->body);
      r.matmuls += op.kind == ir::OpKind::MatMul;
      if (op.kind != ir::OpKind::Cat) continue;
      (op.domain.size() == 1 ? r.concats_per_iteration : r.concats_per_step) += 1;
    }
  };
  count(exe.impl().graph);
  return r;
}

TEST(ProgramRewrites, MergedMatmulsComputeTheSameValues) {
  for (bool vectorize : {false, true}) {
    SCOPED_TRACE(vectorize ? "vectorized" : "per step");
    int calls = 0;
    const Result before = run_program(nullptr, vectorize), after = run_program(merge_first_matmuls(&calls), vectorize);
    EXPECT_GE(calls, 1);
    EXPECT_EQ(before.matmuls, 2);
    EXPECT_EQ(after.matmuls, 1);
    // The weights are concatenated once per iteration, also where the matmul runs per step.
    EXPECT_EQ(after.concats_per_iteration, 1);
    EXPECT_EQ(after.concats_per_step, 0);
    ASSERT_EQ(before.values.size(), after.values.size());
    for (size_t k = 0; k < before.values.size(); ++k)
      EXPECT_NEAR(after.values[k], before.values[k], 1e-5);
  }
}

// Merging x @ w with x @ exp(x @ w) would make the merged matmul read its own output: the region
// is kept as it is, and the program runs as written.
TEST(ProgramRewrites, MergeThatWouldReadItsOwnOutputIsKept) {
  auto values = [](const RewritePolicy& policy) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = ctx.rand_normal({3, 3}, {t}), w = ctx.rand_normal({3, 3}, {t});
    RT b = x.matmul(w);
    RT out = (b.sum() + x.matmul((b * 0.1).exp()).sum()).retain();
    CompileOptions o;
    o.passes.check_ir = true;
    o.passes.rewrite_policy = policy;
    o.passes.vectorize = false;  // per step: the second operands stay matrices
    Executable exe = compile(ctx, {{t.bound, 2}}, o);
    exe.run();
    int matmuls = 0;
    for (const ir::OpNode& op : exe.impl().graph.ops())
      if (op.kind == ir::OpKind::Fused)
        for (const ir::OpNode& in : op.attrs.region->body.ops())
          matmuls += in.kind == ir::OpKind::MatMul;
      else
        matmuls += op.kind == ir::OpKind::MatMul;
    return std::make_pair(exe.get(out, {1}).to_vector().at(0), matmuls);
  };
  int calls = 0;
  const auto [before, before_matmuls] = values(nullptr);
  const auto [after, after_matmuls] = values(merge_first_matmuls(&calls));
  EXPECT_GE(calls, 1);
  EXPECT_EQ(after_matmuls, 2);
  EXPECT_NEAR(after, before, 1e-5);
}

TEST(ProgramRewrites, RegionsRoundTripThroughRewriteGraphs) {
  Graph g;
  Ref x = g.input("x", {4, 3});
  Ref a = g.matmul(x, g.weight("w1", {3, 5}), Act::Tanh);
  g.outputs = {a, g.transpose(a, {1, 0})};
  const RewriteRegion r = to_region(g);
  ASSERT_EQ(r.nodes.size(), 5u);  // x, w1, matmul, its tanh, transpose
  EXPECT_EQ(r.nodes[3].op, "tanh");
  EXPECT_EQ(r.outputs[0], std::make_pair(3, 0));
  const Graph back = to_graph(r);
  EXPECT_EQ(back.shape(back.outputs[1]), (Shape{5, 4}));
  EXPECT_EQ(max_difference(evaluate(back), evaluate(g)), 0.0);
}

// The search under measured costs: whatever it takes, the values stay.
TEST(ProgramRewrites, SearchKeepsTheValues) {
  const Result before = run_program(nullptr, true, 64);
  CompileOptions o;
  set_rewrites(o, "search", "rewrites");
  const Result after = run_program(o.passes.rewrite_policy, true, 64);
  for (size_t k = 0; k < before.values.size(); ++k)
    EXPECT_NEAR(after.values[k], before.values[k], 1e-4 * (1 + std::abs(before.values[k])));
  EXPECT_LE(after.matmuls, 2);
}

TEST(ProgramRewrites, UnknownPolicyIsAnError) {
  CompileOptions o;
  testing::expect_user_error([&] { set_rewrites(o, "greedy", "--rewrites"); },
                             {"--rewrites 'greedy'", "expected none, search or learned"});
  set_rewrites(o, "none", "--rewrites");
  EXPECT_FALSE(o.passes.rewrite_policy);
}

}  // namespace
}  // namespace tempo::rewrite
