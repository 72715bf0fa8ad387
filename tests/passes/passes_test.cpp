// Each pass on a small program: the SDG's text form before and after (Graph::str, without the
// source locations), and the values of the compiled program with the pass on and off.
#include <gtest/gtest.h>

#include <tuple>
#include <utility>

#include "api/autodiff.h"
#include "api/random_offset.h"
#include "api/tempo.h"
#include "driver/compile.h"
#include "driver/executable_impl.h"
#include "e2e/e2e_util.h"
#include "ir/parse.h"
#include "passes/algebraic.h"
#include "passes/conditional_execution.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/domain_reduction.h"
#include "passes/fold_constants.h"
#include "passes/lifting.h"
#include "passes/pass_test_util.h"
#include "passes/simplify_indices.h"
#include "passes/vectorize.h"

namespace tempo {
namespace {

using passes::Program;
using testing::expect_close;
using testing::source;
using testing::text;

std::string after(const Context& ctx, bool (*pass)(Program&), bool expect_change = true) {
  return testing::after_pass(ctx, pass, expect_change);
}

void sink(Context& ctx, const RT& y, const Dims& domain) {
  ctx.udf(
      "sink", [](auto&, auto&) { return std::vector<HostTensor>{}; }, {y}, {}, domain);
}

TEST(Passes, DeadCodeElimination) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT unused = x.exp();
  RT y = (x + 1.0).retain();
  EXPECT_EQ(text(ctx.graph()),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Exp(%0[t]) : f32(2) over (t)\n"
            "%2 = Const() {scalar=1, dtype=f32} : f32()\n"
            "%3 = Add(%0[t], %2[]) : f32(2) over (t)\n");
  EXPECT_EQ(after(ctx, passes::eliminate_dead_code),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Const() {scalar=1, dtype=f32} : f32()\n"
            "%2 = Add(%0[t], %1[]) : f32(2) over (t)\n");
}

TEST(Passes, CommonSubexpressions) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT a = x.tanh(), b = x.tanh();
  RT y = (a * b).retain();
  EXPECT_EQ(after(ctx, passes::eliminate_common_subexpressions),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Tanh(%0[t]) : f32(2) over (t)\n"
            "%2 = Tanh(%0[t]) : f32(2) over (t)\n"
            "%3 = Mul(%1[t], %1[t]) : f32(2) over (t)\n");
  // Two random draws are two values.
  Context ctx2;
  RT r = (ctx2.rand_uniform({2}) + ctx2.rand_uniform({2})).retain();
  after(ctx2, passes::eliminate_common_subexpressions, false);
}

TEST(Passes, AlgebraicIdentities) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2, 3});
  RT a = -(-x);                                        // -(-x) = x
  RT b = (a * 1.0).transpose(0, 1).transpose(0, 1);    // x * 1 = x; permute o permute = id
  RT c = b.exp().log();                                // log(exp(x)) = x
  RT d = (c + ctx.constant(0.0, {4, 2, 3})).retain();  // + 0 that broadcasts: kept
  EXPECT_EQ(after(ctx, passes::simplify_algebra),
            "%0 = Udf() {udf=source} : f32(2, 3) over (t)\n"
            "%1 = Neg(%0[t]) : f32(2, 3) over (t)\n"
            "%2 = Neg(%1[t]) : f32(2, 3) over (t)\n"
            "%3 = Const() {scalar=1, dtype=f32} : f32()\n"
            "%4 = Mul(%0[t], %3[]) : f32(2, 3) over (t)\n"
            "%5 = Permute(%0[t]) {ints=[1, 0]} : f32(3, 2) over (t)\n"
            "%6 = Permute(%0[t]) {ints=[0, 1]} : f32(2, 3) over (t)\n"
            "%7 = Exp(%0[t]) : f32(2, 3) over (t)\n"
            "%8 = Log(%7[t]) : f32(2, 3) over (t)\n"
            "%9 = Const() {exprs=[4, 2, 3], scalar=0, dtype=f32} : f32(4, 2, 3)\n"
            "%10 = Add(%0[t], %9[]) : f32(4, 2, 3) over (t)\n");
}

// sum_t x[t]^T @ g[t] (a vectorized per-step weight gradient) as one flat matmul, and the
// general sum_t a[t] @ b[t], against LibTorch with the algebraic pass on and off.
TEST(Passes, SumOfBatchedMatmulsIsOneMatmul) {
  const int64_t T = 6;
  for (bool on : {true, false}) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {4, 3}), g = source(ctx, {t}, {4, 5}, 1),
       a = source(ctx, {t}, {3, 4}, 2);
    Expr all = slice(0, t.bound);
    RT y = x[all].permute({0, 2, 1}).matmul(g[all]).sum(0).exp().retain();
    RT z = a[all].matmul(g[all]).sum(0).exp().retain();
    CompileOptions o;
    o.passes.algebraic = on;
    o.passes.fusion = false;  // the matmuls stay visible ops
    o.passes.check_ir = true;
    Executable exe = compile(ctx, {{t.bound, T}}, o);
    exe.run();
    int batched = 0;
    for (const ir::OpNode& op : exe.impl().graph.ops())
      if (op.kind == ir::OpKind::MatMul) batched += op.outputs[0].shape.rank() == 3;
    EXPECT_EQ(batched, on ? 0 : 2);
    std::vector<torch::Tensor> xs, gs, as;
    for (int64_t k = 0; k < T; ++k) {
      xs.push_back(testing::eager_source({k}, {4, 3}));
      gs.push_back(testing::eager_source({k}, {4, 5}, 1));
      as.push_back(testing::eager_source({k}, {3, 4}, 2));
    }
    expect_close(testing::to_torch(exe.get(y, {})),
                 torch::stack(xs).permute({0, 2, 1}).matmul(torch::stack(gs)).sum(0).exp(),
                 "x^T g");
    expect_close(testing::to_torch(exe.get(z, {})),
                 torch::stack(as).matmul(torch::stack(gs)).sum(0).exp(), "a g");
  }
}

TEST(Passes, ConstantFolding) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT y = (x * (ctx.constant(0.5) * 4.0).exp()).retain();
  EXPECT_EQ(after(ctx, passes::fold_constants),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Const() {scalar=0.5, dtype=f32} : f32()\n"
            "%2 = Const() {scalar=4, dtype=f32} : f32()\n"
            "%3 = Const() {scalar=2, dtype=f32} : f32()\n"
            "%4 = Const() {scalar=7.38906, dtype=f32} : f32()\n"
            "%5 = Mul(%0[t], %4[]) : f32(2) over (t)\n");
}

TEST(Passes, DomainReduction) {
  Context ctx;
  Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
  RT x = source(ctx, {i, t}, {2});
  RT c = ctx.constant(3.0, {2}, DType::Float32, {i, t});  // the same at every (i, t)
  RT y = (x * c.exp()).retain();
  EXPECT_EQ(after(ctx, passes::reduce_domains),
            "%0 = Udf() {udf=source} : f32(2) over (i, t)\n"
            "%1 = Const() {exprs=[2], scalar=3, dtype=f32} : f32(2)\n"
            "%2 = Exp(%1[]) : f32(2)\n"
            "%3 = Mul(%0[i, t], %2[]) : f32(2) over (i, t)\n");
}

TEST(Passes, SimplifyIndices) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {2});
  RT y = x[max(0, t.var) + min(t.var, t.bound) - t.var].retain();
  EXPECT_EQ(after(ctx, passes::simplify_indices),
            "%0 = Udf() {udf=source} : f32(2) over (t)\n"
            "%1 = Identity(%0[t]) : f32(2) over (t)\n");
}

TEST(Passes, VectorizesPerTimestepOps) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {4, 3});
  RT W = ctx.constant(0.5, {3, 5});
  RT z = x.matmul(W).tanh().sum();
  sink(ctx, z, {t});
  EXPECT_EQ(after(ctx, passes::vectorize),
            "%0 = Udf() {udf=source} : f32(4, 3) over (t)\n"
            "%1 = Const() {exprs=[3, 5], scalar=0.5, dtype=f32} : f32(3, 5)\n"
            "%2 = MatMul(%0[0:T], %1[]) : f32(T, 4, 5)\n"
            "%3 = Tanh(%2[]) : f32(T, 4, 5)\n"
            "%4 = Sum(%3[]) {ints=[1, 2]} : f32(T)\n"
            "%5 = Udf(%6[t]) {udf=sink} : () over (t)\n"
            "%6 = Index(%4[]) {ints=[0], exprs=[t]} : f32() over (t)\n");
}

// A draw is a function of its point: drawn for every step at once, each step's values are those
// it draws alone (vectorization on and off), in one launch per iteration. A draw read point by
// point stays per point. The offsets of a resumed run still apply.
TEST(Passes, DrawsVectorizeAsTheirPoints) {
  auto run = [](bool vectorize, bool per_point_reader) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT u = ctx.rand_uniform({3}, {i, t}), n = ctx.rand_normal({2}, {i, t});
    RT y = (u * 2.0).named("y");
    RT both = (y[{i.var, slice(0, t.bound)}].sum(1) + n[{i.var, slice(0, t.bound)}].sum(1))
                  .retain();
    RT seen = per_point_reader ? (u * 1.0).named("z").retain() : RT();
    offset_random_draws(ctx, i, 5);
    CompileOptions o;
    o.passes.vectorize = vectorize;
    o.passes.fusion = false;  // the draws stay visible ops
    o.passes.check_ir = true;
    Executable exe = compile(ctx, {{i.bound, 2}, {t.bound, 4}}, o);
    exe.run();
    int draws_over_t = 0;
    for (const ir::OpNode& op : exe.impl().graph.ops())
      if (op.kind == ir::OpKind::RandUniform || op.kind == ir::OpKind::RandNormal)
        draws_over_t += std::any_of(op.domain.begin(), op.domain.end(),
                                    [&](const Dim& d) { return d == t; });
    std::vector<double> out;
    for (int64_t k = 0; k < 2; ++k)
      for (double v : exe.get(both, {k}).to_vector()) out.push_back(v);
    return std::make_tuple(out, exe.ops_executed(), draws_over_t);
  };
  auto [on, on_launches, on_draws] = run(true, false);
  auto [off, off_launches, off_draws] = run(false, false);
  ASSERT_EQ(on.size(), off.size());
  for (size_t k = 0; k < on.size(); ++k) EXPECT_NEAR(on[k], off[k], 1e-6);
  EXPECT_EQ(on_draws, 0);
  EXPECT_EQ(off_draws, 2);
  EXPECT_LE(on_launches + 2 * 2 * 3, off_launches) << on_launches << " vs " << off_launches;
  auto [kept, kept_launches, kept_draws] = run(true, true);
  for (size_t k = 0; k < kept.size(); ++k) EXPECT_NEAR(kept[k], off[k], 1e-6);
  EXPECT_EQ(kept_draws, 1);  // u, which z reads at each step
}

// A large value that a recurrence makes at each step and that only per-step reads see dies at
// its own step: batching its reader over t would keep every step's value alive until the batch
// runs (PPO's bootstrap values of final observations). Small values are still batched, and so
// is a reader whose own values are larger (a per-step weight gradient): per step, it would
// hold those instead.
TEST(Passes, LargePointsReadPerStepStayPerStep) {
  // 4 KiB and 512 KiB a step, read into 8 bytes a row, and 512 KiB read into 2 MiB.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{4, 2}, {512, 2}, {512, 1024}}) {
    const bool batched = rows == 4 || cols == 1024;
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {rows, 256});
    RT s = ctx.placeholder({DType::Float32, {rows, 256}}, {t}, "s");
    s[0] = ctx.zeros({rows, 256});
    s[t.var + 1] = (s[t.var] * 0.5 + x[t.var]).named("next");
    RT v = s.matmul(ctx.constant(0.5, {256, cols}));
    RT total = v[slice(0, t.bound)].sum(0).retain();
    const std::string sdg = after(ctx, passes::vectorize, /*expect_change=*/batched);
    EXPECT_EQ(sdg.find("MatMul(%1[0:T]") != std::string::npos, batched) << sdg;
    EXPECT_EQ(sdg.find("MatMul(%1[t]") != std::string::npos, !batched) << sdg;
  }
}

// A batch that a recurrence reads per step is computed before the recurrence's first step and
// kept whole until its last. Over a long dimension (a training run's iterations: TD3's target
// noise, KiBs a step) that is memory growing with the run, so what it batches stays per step;
// over a short one it is batched.
TEST(Passes, LargeBatchesReadPerStepStayPerStep) {
  for (int64_t steps : {16, 100000}) {  // 32 KiB and 195 MiB batched
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT noise = (source(ctx, {t}, {256}) * 0.2).named("noise");
    RT s = ctx.placeholder({DType::Float32, {256}}, {t}, "s");
    s[0] = ctx.zeros({256});
    s[t.var + 1] = (s[t.var] * 0.5 + noise[t.var]).named("next");
    RT total = s[slice(0, t.bound)].sum(0).retain();
    passes::Program p(ctx.graph(), ctx.retained());
    p.bound_values = {{"T", steps}};
    EXPECT_EQ(passes::vectorize(p), steps == 16);
    ir::validate(p.graph);
    const std::string sdg = testing::text(p.graph);
    EXPECT_EQ(sdg.find("Mul(%0[0:T]") != std::string::npos, steps == 16) << sdg;
    EXPECT_EQ(sdg.find("Mul(%0[t]") != std::string::npos, steps == 100000) << sdg;
  }
}

// Batching over the outermost dimension stacks every point of the per-point sources read, each
// a tensor of its own from the run's start until the batch runs: a step counter's scalars
// (TD3's delayed updates) are batched over 16 steps, not over a run of 100,000.
TEST(Passes, PerPointSourcesOfALongRunStayPerStep) {
  for (int64_t steps : {16, 100000}) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT started = (ctx.symbol(t.var) >= 100.0).named("started");
    RT count = started.cast(DType::Float32)[slice(0, t.bound)].sum(0).retain();
    passes::Program p(ctx.graph(), ctx.retained());
    p.bound_values = {{"T", steps}};
    passes::vectorize(p);
    ir::validate(p.graph);
    const std::string sdg = testing::text(p.graph);
    EXPECT_EQ(sdg.find("Ge(%0[0:T]") != std::string::npos, steps == 16) << sdg;
    EXPECT_EQ(sdg.find("Ge(%0[t]") != std::string::npos, steps == 100000) << sdg;
  }
}

// s[t + 1] = f(s[t]) is a cycle along t: never vectorized; what reads it per step is.
TEST(Passes, RecurrenceStaysPerStep) {
  Context ctx;
  Dim t = ctx.dim("t", "T");
  RT x = source(ctx, {t}, {3});
  RT s = ctx.placeholder({DType::Float32, {3}}, {t}, "s");
  s[0] = ctx.zeros({3});
  s[t.var + 1] = (s[t.var] * 0.5 + x[t.var]).named("next");
  RT y = (s.exp() * 2.0).named("y");
  RT total = y[slice(0, t.bound)].sum(0).retain();
  EXPECT_EQ(after(ctx, passes::vectorize),
            "%0 = Udf() {udf=source} : f32(3) over (t)\n"
            "%1 = Merge(%2[] if t == 0, %5[t - 1] if 1 <= t) : f32(3) over (t)\n"
            "%2 = Const() {exprs=[3], scalar=0, dtype=f32} : f32(3)\n"
            "%3 = Const() {scalar=0.5, dtype=f32} : f32()\n"
            "%4 = Mul(%1[t], %3[]) : f32(3) over (t)\n"
            "%5 = Add(%4[t], %0[t]) : f32(3) over (t)\n"
            "%6 = Exp(%1[0:T]) : f32(T, 3)\n"
            "%7 = Const() {scalar=2, dtype=f32} : f32()\n"
            "%8 = Mul(%6[], %7[]) : f32(T, 3)\n"
            "%9 = Sum(%8[]) {ints=[0]} : f32(3)\n");
}

// TEMPO Alg. 1's per-step learner: loss[t] = -log_softmax(x[t] @ W).gather(a[t]).sum(), and the
// gradient of their sum over t. Its backward pass (the gather's gradient, the running sum of
// W's gradient over t) runs batched over t: only the sources stay per step. So also over a long
// t whose batch of W-sized terms is large (2 MiB at T = 256): its one reader, the lifted sum,
// reads it whole, and the running sum's replaced adds are gone before vectorization; the sum
// over t of x[t]^T dy[t] is then one product. Values against LibTorch's autograd.
TEST(Passes, PerStepPolicyGradientRunsBatched) {
  for (auto [T, in, out] : {std::tuple<int64_t, int64_t, int64_t>{6, 3, 5}, {256, 64, 32}}) {
    Context ctx;
    Dim t = ctx.dim("t", "T");
    RT x = source(ctx, {t}, {4, in});
    RT W = source(ctx, {}, {in, out}, 1);
    RT act = ((source(ctx, {t}, {4, 1}, 2) + 1.0) * 2.0).cast(DType::Int64);  // in [0, 4]
    RT loss = -x.matmul(W).log_softmax(-1).gather(1, act).sum();
    RT g = grad(loss[slice(0, t.bound)].sum(), {W})[0].retain();
    Executable exe = compile(ctx, {{t.bound, T}});
    exe.run();
    for (const ir::OpNode& op : exe.impl().graph.ops())
      if (!op.domain.empty() && op.kind != ir::OpKind::Udf)
        ADD_FAILURE() << "T = " << T << ": per-step op left: " << op.describe();
    torch::Tensor tW = testing::eager_source({}, {in, out}, 1).requires_grad_(true);
    torch::Tensor total = torch::zeros({});
    for (int64_t k = 0; k < T; ++k) {
      torch::Tensor a = ((testing::eager_source({k}, {4, 1}, 2) + 1.0) * 2.0).to(torch::kInt64);
      total = total - torch::log_softmax(testing::eager_source({k}, {4, in}).matmul(tW), -1)
                          .gather(1, a)
                          .sum();
    }
    total.backward();
    expect_close(testing::to_torch(exe.get(g, {})), tW.grad(), cat("dW, T = ", T));
  }
}

// The same program with every pass, with vectorization off and with no passes: same values.
// A where() on a condition of the point alone runs only the branch it takes: the where becomes
// a merge whose first branch is read where the condition holds, and the ops only that branch
// reads run at those points only. The values are those of the program without the pass.
TEST(Passes, ConditionalExecution) {
  auto program = [](Context& ctx) {
    Dim i = ctx.dim("i", "I");
    RT x = source(ctx, {i}, {3});
    RT every_third = ctx.symbol(i.var % 3) == 0.0;
    RT branch = (x * 2.0).exp();
    branch.sin();  // unread: DCE removes it, and without DCE it reads `branch` at every point
    return where(every_third, branch.tanh(), x).retain();
  };
  {
    Context ctx;
    program(ctx);
    const std::string t = after(ctx, passes::execute_conditionally);
    EXPECT_NE(t.find("Merge(%"), std::string::npos) << t;
    EXPECT_NE(t.find("Exp(%"), std::string::npos) << t;
    for (const char* kind : {"Mul(", "Exp(", "Tanh("}) {
      const std::string line = t.substr(t.find(kind), t.find('\n', t.find(kind)) - t.find(kind));
      EXPECT_NE(line.find("where i % 3 == 0"), std::string::npos) << line;
    }
  }
  auto run = [&](PassOptions po) {
    Context ctx;
    RT y = program(ctx);
    CompileOptions o;
    o.passes = po;
    o.passes.check_ir = true;
    Executable exe = compile(ctx, {{ctx.dims()[0].bound, 9}}, o);
    exe.run();
    std::vector<double> out;
    for (int64_t k = 0; k < 9; ++k)
      for (double v : exe.get(y, {k}).to_vector()) out.push_back(v);
    return std::make_pair(out, exe.ops_executed());
  };
  PassOptions per_op;  // every op its own launch, per point
  per_op.vectorize = per_op.fusion = false;
  PassOptions per_op_off = per_op;
  per_op_off.conditional_execution = false;
  PassOptions off;
  off.conditional_execution = false;
  const auto [on_values, on_launches] = run(per_op);
  const auto [off_values, off_launches] = run(per_op_off);
  EXPECT_EQ(on_values, off_values);
  EXPECT_EQ(run(PassOptions{}).first, run(off).first);
  PassOptions no_dce = per_op;
  no_dce.dce = false;
  EXPECT_EQ(run(no_dce).first, off_values);
  // Mul, Exp and Tanh at 3 of the 9 points instead of 9; the symbol and comparison nowhere.
  EXPECT_GE(off_launches - on_launches, 3 * 6 + 2 * 9) << on_launches << " vs " << off_launches;
}

TEST(Passes, OnAndOffAgree) {
  auto run = [](const PassOptions& po) {
    Context ctx;
    Dim i = ctx.dim("i", "I"), t = ctx.dim("t", "T");
    RT x = source(ctx, {i, t}, {4, 3});
    RT W = ctx.constant(0.25, {3, 3}) + ctx.constant(0.0, {3, 3}) * 1.0;
    RT s = ctx.placeholder({DType::Float32, {4, 3}}, {i, t}, "s");
    s[{i.var, 0}] = x[{i.var, 0}];
    s[{i.var, t.var + 1}] = (s[{i.var, t.var}].matmul(W).tanh() + x[{i.var, t.var}]).named("next");
    RT feat = (s * 2.0).sigmoid() - (s * 2.0).sigmoid().exp().log() * 0.5;
    RT y = feat[{i.var, slice(0, t.bound)}].sum({0, 1}).retain();
    CompileOptions o;
    o.passes = po;
    o.passes.check_ir = true;
    Executable exe = compile(ctx, {{i.bound, 2}, {t.bound, 6}}, o);
    exe.run();
    std::vector<double> out;
    for (int64_t k = 0; k < 2; ++k)
      for (double v : exe.get(y, {k}).to_vector()) out.push_back(v);
    return std::make_pair(out, exe.ops_executed());
  };
  PassOptions no_vec;
  no_vec.vectorize = false;
  auto [on, on_launches] = run(PassOptions{});
  auto [mid, mid_launches] = run(no_vec);
  auto [off, off_launches] = run(PassOptions::none());
  ASSERT_EQ(on.size(), off.size());
  for (size_t k = 0; k < on.size(); ++k) {
    EXPECT_NEAR(on[k], off[k], 1e-5);
    EXPECT_NEAR(mid[k], off[k], 1e-5);
  }
  EXPECT_LT(on_launches, mid_launches);
  EXPECT_LT(mid_launches, off_launches);
}

// Before/after pairs written in the IR's text form (ir::parse_graph): the pass turns `before`
// into exactly `after` (ops it replaced stay, unread, for DCE).
struct TextCase {
  const char* name;
  bool (*pass)(Program&);
  const char* before;
  const char* after;
};

const TextCase kTextCases[] = {
    {"algebraic", passes::simplify_algebra,
     R"(%0 = RandUniform() {ints=[0], exprs=[2, 3], dtype=f32} : f32(2, 3) over (t)
        %1 = Neg(%0[t]) : f32(2, 3) over (t)
        %2 = Neg(%1[t]) : f32(2, 3) over (t)
        %3 = Slice(%2[t]) {ints=[1], exprs=[1, 3]} : f32(2, 2) over (t)
        %4 = Index(%3[t]) {ints=[1], exprs=[1]} : f32(2) over (t)
        %5 = Exp(%4[t]) : f32(2) over (t))",
     R"(%0 = RandUniform() {ints=[0], exprs=[2, 3], dtype=f32} : f32(2, 3) over (t)
        %1 = Neg(%0[t]) : f32(2, 3) over (t)
        %2 = Neg(%1[t]) : f32(2, 3) over (t)
        %3 = Slice(%0[t]) {ints=[1], exprs=[1, 3]} : f32(2, 2) over (t)
        %4 = Index(%0[t]) {ints=[1], exprs=[2]} : f32(2) over (t)
        %5 = Exp(%4[t]) : f32(2) over (t))"},
    // sum_t x[t]^T @ g[t] = flat(x)^T @ flat(g); a reshape of a reshape reads the stack itself.
    {"algebraic", passes::simplify_algebra,
     R"(%0 = RandNormal() {ints=[0], exprs=[4, 3], dtype=f32} : f32(4, 3) over (t)
        %1 = RandNormal() {ints=[1], exprs=[4, 5], dtype=f32} : f32(4, 5) over (t)
        %2 = Permute(%0[0:T]) {ints=[0, 2, 1]} : f32(T, 3, 4)
        %3 = MatMul(%2[], %1[0:T]) : f32(T, 3, 5)
        %4 = Sum(%3[]) {ints=[0]} : f32(3, 5)
        %5 = Exp(%4[]) : f32(3, 5)
        %6 = Reshape(%0[0:T]) {exprs=[T, 12]} : f32(T, 12)
        %7 = Reshape(%6[]) {exprs=[12, T]} : f32(12, T))",
     R"(%0 = RandNormal() {ints=[0], exprs=[4, 3], dtype=f32} : f32(4, 3) over (t)
        %1 = RandNormal() {ints=[1], exprs=[4, 5], dtype=f32} : f32(4, 5) over (t)
        %2 = Permute(%0[0:T]) {ints=[0, 2, 1]} : f32(T, 3, 4)
        %3 = MatMul(%2[], %1[0:T]) : f32(T, 3, 5)
        %4 = Sum(%3[]) {ints=[0]} : f32(3, 5)
        %5 = Exp(%11[]) : f32(3, 5)
        %6 = Reshape(%0[0:T]) {exprs=[T, 12]} : f32(T, 12)
        %7 = Reshape(%0[0:T]) {exprs=[12, T]} : f32(12, T)
        %8 = Reshape(%1[0:T]) {exprs=[4*T, 5]} : f32(4*T, 5)
        %9 = Reshape(%0[0:T]) {exprs=[4*T, 3]} : f32(4*T, 3)
        %10 = Permute(%9[]) {ints=[1, 0]} : f32(3, 4*T)
        %11 = MatMul(%10[], %8[]) : f32(3, 5))"},
    {"cse", passes::eliminate_common_subexpressions,
     R"(%0 = RandNormal() {ints=[0], exprs=[4], dtype=f32} : f32(4) over (t)
        %1 = Exp(%0[t - 1]) : f32(4) over (t) where 0 < t
        %2 = Exp(%0[t - 1]) : f32(4) over (t) where 0 < t
        %3 = Exp(%0[t]) : f32(4) over (t) where 0 < t
        %4 = Add(%1[t], %2[t]) : f32(4) over (t) where 0 < t
        %5 = Add(%2[t], %3[t]) : f32(4) over (t) where 0 < t)",
     R"(%0 = RandNormal() {ints=[0], exprs=[4], dtype=f32} : f32(4) over (t)
        %1 = Exp(%0[t - 1]) : f32(4) over (t) where 0 < t
        %2 = Exp(%0[t - 1]) : f32(4) over (t) where 0 < t
        %3 = Exp(%0[t]) : f32(4) over (t) where 0 < t
        %4 = Add(%1[t], %1[t]) : f32(4) over (t) where 0 < t
        %5 = Add(%1[t], %3[t]) : f32(4) over (t) where 0 < t)"},
    {"domain-reduction", passes::reduce_domains,
     R"(%0 = RandNormal() {ints=[0], exprs=[4], dtype=f32} : f32(4) over (i)
        %1 = Const() {exprs=[4], scalar=2, dtype=f32} : f32(4) over (i, t)
        %2 = Mul(%0[i], %1[i, t]) : f32(4) over (i, t)
        %3 = Sum(%2[i, 0:T]) {ints=[0]} : f32(4) over (i))",
     R"(%0 = RandNormal() {ints=[0], exprs=[4], dtype=f32} : f32(4) over (i)
        %1 = Const() {exprs=[4], scalar=2, dtype=f32} : f32(4)
        %2 = Mul(%0[i], %1[]) : f32(4) over (i, t)
        %3 = Sum(%2[i, 0:T]) {ints=[0]} : f32(4) over (i))"},
    // Along t, then along i: the sum, which no recurrence over i involves, is batched over I too.
    {"vectorize", passes::vectorize,
     R"(%0 = RandNormal() {ints=[0], exprs=[3], dtype=f32} : f32(3) over (i, t)
        %1 = Merge(%2[i] if t == 0, %3[i, t - 1] if 0 < t) : f32(3) over (i, t)
        %2 = Const() {exprs=[3], scalar=0, dtype=f32} : f32(3) over (i)
        %3 = Add(%1[i, t], %0[i, t]) : f32(3) over (i, t)
        %4 = Tanh(%1[i, t]) : f32(3) over (i, t)
        %5 = Mul(%4[i, t], %0[i, t]) : f32(3) over (i, t)
        %6 = Sum(%5[i, 0:T]) {ints=[0]} : f32(3) over (i))",
     R"(%0 = RandNormal() {ints=[0], exprs=[3], dtype=f32} : f32(3) over (i, t)
        %1 = Merge(%2[i] if t == 0, %3[i, t - 1] if 0 < t) : f32(3) over (i, t)
        %2 = Const() {exprs=[3], scalar=0, dtype=f32} : f32(3) over (i)
        %3 = Add(%1[i, t], %0[i, t]) : f32(3) over (i, t)
        %4 = Tanh(%1[i, 0:T]) : f32(T, 3) over (i)
        %5 = Mul(%4[i], %0[i, 0:T]) : f32(T, 3) over (i)
        %6 = Sum(%5[0:I]) {ints=[1]} : f32(I, 3))"},
    {"lifting", passes::lift_scans,
     R"(%0 = RandNormal() {ints=[0], exprs=[2], dtype=f32} : f32(2) over (i, t)
        %1 = Sum(%0[i, max(0, t - 2):t + 1]) {ints=[0]} : f32(2) over (i, t))",
     R"(%0 = RandNormal() {ints=[0], exprs=[2], dtype=f32} : f32(2) over (i, t)
        %1 = Sub(%4[i, t], %5[i, t]) : f32(2) over (i, t)
        %2 = CumSum(%0[i, 0:T]) {ints=[0]} : f32(T, 2) over (i)
        %3 = Pad(%2[i]) {ints=[0], exprs=[1, 0], scalar=0} : f32(T + 1, 2) over (i)
        %4 = Index(%3[i]) {ints=[0], exprs=[t + 1]} : f32(2) over (i, t)
        %5 = Index(%3[i]) {ints=[0], exprs=[max(0, t - 2)]} : f32(2) over (i, t))"},
};

TEST(Passes, TextBeforeAfter) {
  const Dims dims = {Dim("i", "I"), Dim("t", "T")};
  for (const TextCase& c : kTextCases) {
    SCOPED_TRACE(c.name);
    Program p(ir::parse_graph(c.before, dims), {});
    ir::validate(p.graph);
    EXPECT_TRUE(c.pass(p));
    ir::validate(p.graph);
    EXPECT_EQ(ir::str_without_locations(p.graph), ir::parse_graph(c.after, dims).str());
  }
}

TEST(Passes, UnknownPassIsAnError) {
  PassOptions o;
  try {
    o.set("vectorise", false);
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("vectorize"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tempo
