// Rewrites of Tempo's own programs: regions of the optimized SDG go to a policy as rewrite graphs
// and come back as ops; the program computes the same values with and without them.
#include "rewrite/program_rewrites.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "expect_error.h"
#include "driver/executable_impl.h"
#include "rewrite/agent.h"
#include "rewrite/subst.h"

namespace tempo::rewrite {
namespace {

// A policy that merges the first two matmuls reading one input (TASO's merge_matmul_shared_input).
RewritePolicy merge_first_matmuls(int* calls) {
  return [calls](const RewriteRegion& region) {
    ++*calls;
    const Graph g = to_graph(region);
    RewriteChoice c;
    for (const Match& m : all_matches(g))
      if (m.rule == rule_index("merge_matmul_shared_input")) {
        c.graph = to_region(apply(g, m));
        break;
      }
    return c;
  };
}

// The ops a compiled program runs: its own and those inside its fused regions.
std::vector<const ir::OpNode*> ops_run(const ir::Graph& g) {
  std::vector<const ir::OpNode*> out;
  for (const ir::OpNode& op : g.ops()) {
    if (op.kind != ir::OpKind::Fused) {
      out.push_back(&op);
      continue;
    }
    for (const ir::OpNode* in : ops_run(op.attrs.region->body)) out.push_back(in);
  }
  return out;
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
  for (const ir::OpNode* op : ops_run(exe.impl().graph)) {
    r.matmuls += op->kind == ir::OpKind::MatMul;
    if (op->kind == ir::OpKind::Cat)
      (op->domain.size() == 1 ? r.concats_per_iteration : r.concats_per_step) += 1;
  }
  return r;
}

TEST(ProgramRewrites, MergedMatmulsComputeTheSameValues) {
  for (bool vectorize : {false, true}) {
    SCOPED_TRACE(vectorize ? "vectorized" : "per step");
    int calls = 0;
    const Result before = run_program(nullptr, vectorize);
    const Result after = run_program(merge_first_matmuls(&calls), vectorize);
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
    for (const ir::OpNode* op : ops_run(exe.impl().graph))
      matmuls += op->kind == ir::OpKind::MatMul;
    return std::make_pair(exe.get(out, {1}).to_vector().at(0), matmuls);
  };
  int calls = 0;
  const auto [before, before_matmuls] = values(nullptr);
  const auto [after, after_matmuls] = values(merge_first_matmuls(&calls));
  EXPECT_GE(calls, 1);
  EXPECT_EQ(after_matmuls, 2);
  EXPECT_NEAR(after, before, 1e-5);
}

// Random programs of the region operators over per-step inputs and per-iteration weights, each
// rewritten by a random sequence of substitutions: the values stay those of the program as
// written (weight-only nodes hoisted, splits as slices, reshapes and transposes put back).
TEST(ProgramRewrites, RandomSubstitutionsOnRandomProgramsKeepTheValues) {
  int replaced = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    SCOPED_TRACE(cat("seed ", seed));
    auto values = [seed](const RewritePolicy& policy) {
      std::mt19937_64 rng(seed);
      auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
      Context ctx;
      Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
      std::vector<RT> acts = {ctx.rand_normal({4, 8}, {i, t}), ctx.rand_normal({4, 8}, {i, t})};
      std::vector<RT> weights = {ctx.rand_normal({8, 8}, {i}) * 0.3,
                                 ctx.rand_normal({8, 8}, {i}) * 0.3};
      for (int k = 0; k < 9; ++k) {
        const RT& a = acts[pick(acts.size())];
        const RT& b = acts[pick(acts.size())];
        const RT& w = weights[pick(weights.size())];
        switch (pick(8)) {
          case 0: acts.push_back(a.matmul(w)); break;
          case 1: acts.push_back(a.matmul(w).tanh()); break;
          case 2: acts.push_back(a + b); break;
          case 3: acts.push_back((a * b).sigmoid()); break;
          case 4: acts.push_back(a.reshape({8, 4}).reshape({4, 8}).relu()); break;
          case 5: weights.push_back(w.transpose(0, 1).matmul(weights[pick(weights.size())])); break;
          case 6:
            acts.push_back(tempo::cat({a, b}, 1).matmul(tempo::cat({w, w.transpose(0, 1)}, 0)));
            break;
          default: acts.push_back(a.matmul(w) + b.matmul(w)); break;
        }
      }
      RT out = acts.back().sum();
      for (size_t k = 2; k + 1 < acts.size(); k += 2) out = out + acts[k].square().sum();
      out = out.retain();
      CompileOptions o;
      o.passes.vectorize = false;
      o.passes.check_ir = true;
      o.passes.rewrite_policy = policy;
      o.codegen = false;  // what is checked is the graph; generated loops are tested above
      Executable exe = compile(ctx, {{i.bound, 2}, {t.bound, 2}}, o);
      exe.run();
      std::vector<double> v;
      for (int64_t a = 0; a < 2; ++a)
        for (int64_t b = 0; b < 2; ++b) v.push_back(exe.get(out, {a, b}).to_vector().at(0));
      return v;
    };
    bool changed = false;
    RewritePolicy random_steps = [&](const RewriteRegion& region) {
      std::mt19937_64 rng(seed * 7919);
      Graph g = to_graph(region);
      for (int step = 0; step < 6; ++step) {
        const std::vector<Match> ms = all_matches(g);
        if (ms.empty()) break;
        g = apply(g, ms[rng() % ms.size()]);
        changed = true;
      }
      return RewriteChoice{to_region(g.rebuilt()), ""};
    };
    const std::vector<double> before = values(nullptr), after = values(random_steps);
    replaced += changed;
    for (size_t k = 0; k < before.size(); ++k)
      EXPECT_NEAR(after[k], before[k], 1e-4 * (1 + std::abs(before[k])));
  }
  EXPECT_GE(replaced, 8);  // most programs had a substitution to take
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

// The search and the agents under measured costs: whatever they take, the values stay.
TEST(ProgramRewrites, SearchAndAgentsKeepTheValues) {
  const Result before = run_program(nullptr, true, 64);
  // A saved agent, trained briefly on a graph of the same kind as the program's region.
  Graph heads;
  Ref x = heads.input("x", {64, 3});
  heads.outputs = {heads.matmul(x, heads.weight("w1", {3, 5}), Act::Tanh),
                   heads.matmul(x, heads.weight("w2", {3, 6}), Act::Tanh)};
  CostModel cost;
  PpoOptions po;
  po.rollouts = 2;
  po.hidden = 16;
  const std::string saved = ::testing::TempDir() + "program_rewrites_agent.safetensors";
  train_agent({heads}, cost, po).agent.save(saved);
  const std::string learned_file = "learned:" + saved;
  const std::vector<std::string> policies = {"search", "learned", learned_file, "world-model"};
  for (const std::string& policy : policies) {
    SCOPED_TRACE(policy);
    CompileOptions o;
    set_rewrites(o, policy, "rewrites");
    const Result after = run_program(o.passes.rewrite_policy, true, 64);
    for (size_t k = 0; k < before.values.size(); ++k)
      EXPECT_NEAR(after.values[k], before.values[k], 1e-4 * (1 + std::abs(before.values[k])));
    EXPECT_LE(after.matmuls, 2);
  }
}

TEST(ProgramRewrites, UnknownPolicyIsAnError) {
  CompileOptions o;
  testing::expect_user_error(
      [&] { set_rewrites(o, "greedy", "--rewrites"); },
      {"--rewrites 'greedy'", "expected none, search, learned, learned:FILE", "world-model"});
  testing::expect_user_error([&] { set_rewrites(o, "learned:/no/such/agent", "--rewrites"); },
                             {"/no/such/agent"});
  set_rewrites(o, "none", "--rewrites");
  EXPECT_FALSE(o.passes.rewrite_policy);
}

}  // namespace
}  // namespace tempo::rewrite
