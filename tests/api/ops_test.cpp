// RT operations: lowering to op kinds, derived ops, sources, UDFs and retain (no execution).
#include <gtest/gtest.h>

#include <set>

#include "api/autodiff.h"
#include "api/tempo.h"
#include "util/error.h"

namespace tempo {
namespace {

using ir::OpKind;

TensorType f32(std::vector<Expr> s) { return TensorType{DType::Float32, Shape(std::move(s))}; }

// Kinds of all ops in the graph (to check which primitives a derived op used).
std::multiset<OpKind> kinds(const Context& ctx) {
  std::multiset<OpKind> out;
  for (const auto& op : ctx.graph().ops()) out.insert(op.kind);
  return out;
}

const ir::Edge& input_edge(const Context& ctx, const RT& r, size_t k) {
  return ctx.graph().edge(ctx.graph().op(r.op()).inputs.at(k));
}

std::string dom_str(const RT& r) { return sym::dims_str(r.domain()); }

TEST(Ops, ScalarOperands) {
  Context ctx;
  RT x = ctx.zeros({3}, DType::Int64);
  RT y = x + 2.0;
  EXPECT_EQ(y.dtype(), DType::Int64);
  const ir::OpNode& c = ctx.graph().op(input_edge(ctx, y, 1).source);
  EXPECT_EQ(c.kind, OpKind::Const);
  EXPECT_EQ(c.outputs[0].str(), "i64()");
  EXPECT_DOUBLE_EQ(c.attrs.scalar, 2.0);
  RT z = 0.5 * x;
  EXPECT_EQ(z.dtype(), DType::Float32);
  RT b = x > 1.0;
  EXPECT_EQ(b.dtype(), DType::Bool);
  RT n = -x;
  EXPECT_EQ(ctx.graph().op(n.op()).kind, OpKind::Neg);
  EXPECT_EQ(ctx.graph().op(n.op()).name, "neg");
}

TEST(Ops, ReductionAxes) {
  Context ctx;
  RT x = ctx.zeros({2, 3, 4});
  EXPECT_EQ(x.sum().shape().str(), "()");
  EXPECT_EQ(x.sum({}).shape().str(), "()");  // all dims, not dim 0
  EXPECT_EQ(x.sum(0).shape().str(), "(3, 4)");
  EXPECT_EQ(x.sum({0}).shape().str(), "(3, 4)");
  EXPECT_EQ(x.mean({0, 2}).shape().str(), "(3)");
  EXPECT_EQ(x.var(-1, true).shape().str(), "(2, 3, 1)");
}

// ReadSubstitution: ops built while it lives read the replacement; afterwards, the original.
TEST(Ops, ReadSubstitutionScopesReads) {
  Context ctx;
  Dim i = ctx.dim("i", "I");
  RT p = ctx.placeholder(f32({3}), {i}, "p");
  p[0] = ctx.zeros({3});
  p[i.var + 1] = p * 2.0;
  RT x = ctx.ones({3});
  RT inside, outside;
  {
    ReadSubstitution at_start(ctx, {{p, p[0]}});
    inside = x * p;
  }
  outside = x * p;
  EXPECT_EQ(dom_str(inside), "");
  EXPECT_EQ(input_edge(ctx, inside, 1).phi.str(), "[0]");
  EXPECT_EQ(dom_str(outside), "i:I");
  RT wrong = ctx.zeros({4});
  EXPECT_THROW(ReadSubstitution(ctx, {{p, wrong}}), UserError);
}

TEST(Ops, ElementwiseAndClamp) {
  Context ctx;
  RT x = ctx.rand_normal({2, 3});
  EXPECT_EQ(x.exp().shape().str(), "(2, 3)");
  RT c = x.clamp(-1, 1);
  EXPECT_EQ(ctx.graph().op(c.op()).kind, OpKind::Minimum);
  EXPECT_EQ(x.square().shape().str(), "(2, 3)");
  EXPECT_EQ(x.cast(DType::Float64).dtype(), DType::Float64);
  EXPECT_EQ(where(x > 0.0, x, 0.0).shape().str(), "(2, 3)");
}

TEST(Ops, Reductions) {
  Context ctx;
  RT x = ctx.rand_normal({2, 3, 4});
  EXPECT_EQ(x.sum(-1).shape().str(), "(2, 3)");
  EXPECT_EQ(x.sum({0, 2}, true).shape().str(), "(1, 3, 1)");
  EXPECT_EQ(x.sum().shape().str(), "()");
  EXPECT_EQ(x.mean(1).shape().str(), "(2, 4)");
  EXPECT_EQ(x.var({1}).shape().str(), "(2, 4)");
  EXPECT_EQ(x.max(1).shape().str(), "(2, 4)");
  EXPECT_EQ(x.argmax(1).dtype(), DType::Int64);
  EXPECT_EQ(x.softmax(-1).shape().str(), "(2, 3, 4)");
  EXPECT_EQ(x.log_softmax(-1).shape().str(), "(2, 3, 4)");
  EXPECT_EQ(x.logsumexp(1).shape().str(), "(2, 4)");
  EXPECT_EQ(x.logsumexp(1, true).shape().str(), "(2, 1, 4)");
  EXPECT_EQ(x.cumsum(0).shape().str(), "(2, 3, 4)");
  EXPECT_THROW(x.sum(3), UserError);
  EXPECT_THROW(x.sum(-4), UserError);
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Ops, MeanOverDynamicSize) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT r = ctx.rand_uniform({}, {ctx.dims()[0]});
  RT m = r[slice(t, T)].mean();
  EXPECT_EQ(m.shape().str(), "()");
  EXPECT_EQ(m.dtype(), DType::Float32);
  EXPECT_EQ(kinds(ctx).count(OpKind::EvalSymbol), 1u);
  for (const auto& op : ctx.graph().ops())
    if (op.kind == OpKind::EvalSymbol) EXPECT_EQ(op.attrs.exprs[0].str(), "T - t");
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Ops, DiscountedSum) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT r = ctx.rand_uniform({2}, {ctx.dims()[0]});
  RT g = r[slice(t, T)].discounted_sum(0.99);
  EXPECT_EQ(g.shape().str(), "(2)");
  EXPECT_EQ(dom_str(g), "t:T");
  EXPECT_EQ(kinds(ctx).count(OpKind::DiscountedSum), 1u);
  RT done = ctx.rand_uniform({2}, {ctx.dims()[0]});
  RT h = r[slice(t, T)].discounted_sum(0.99, done[slice(t, T)]);
  EXPECT_EQ(h.shape().str(), "(2)");
  EXPECT_THROW(r[slice(t, T)].discounted_sum(0.99, done), UserError);  // shapes differ
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Ops, Movement) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT x = ctx.rand_normal({2, 3, 4});
  EXPECT_EQ(x.reshape({6, 4}).shape().str(), "(6, 4)");
  EXPECT_EQ(x.permute({2, 0, 1}).shape().str(), "(4, 2, 3)");
  EXPECT_EQ(x.transpose(0, -1).shape().str(), "(4, 3, 2)");
  EXPECT_EQ(x.unsqueeze(-1).shape().str(), "(2, 3, 4, 1)");
  EXPECT_EQ(x.unsqueeze(0).squeeze(0).shape().str(), "(2, 3, 4)");
  EXPECT_EQ(x.flatten().shape().str(), "(24)");
  EXPECT_EQ(x.flip(1).shape().str(), "(2, 3, 4)");
  EXPECT_EQ(x.pad(2, 1, 1).shape().str(), "(2, 3, 6)");
  auto parts = x.split(2, 3);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].shape().str(), "(2, 3, 1)");
  EXPECT_EQ(cat(parts, -1).shape().str(), "(2, 3, 4)");
  EXPECT_EQ(stack({x, x}, 1).shape().str(), "(2, 2, 3, 4)");
  EXPECT_EQ(x.expand({5, 2, 3, 4}).shape().str(), "(5, 2, 3, 4)");
  RT s = ctx.rand_normal({10}).slice(0, 0, t);
  EXPECT_EQ(s.shape().str(), "(t)");
  EXPECT_EQ(dom_str(s), "t:T");
  EXPECT_THROW(x.permute({0, 1}), UserError);
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Ops, SpatialIndexAddsDomain) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT table = ctx.rand_normal({10, 3});
  RT row = table.index(0, t);
  EXPECT_EQ(row.shape().str(), "(3)");
  EXPECT_EQ(dom_str(row), "t:T");
  RT idx = ctx.tensor(HostTensor::from(std::vector<int64_t>{1, 4}, {2}));
  EXPECT_EQ(table.index_select(0, idx).shape().str(), "(2, 3)");
  EXPECT_EQ(ctx.graph().op(idx.op()).kind, OpKind::Udf);
  EXPECT_TRUE(idx.domain().empty());
  RT g = table.gather(1, ctx.zeros({10, 1}, DType::Int64));
  EXPECT_EQ(g.shape().str(), "(10, 1)");
  EXPECT_EQ(table.index_add(0, idx, ctx.ones({2, 3})).shape().str(), "(10, 3)");
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Ops, LinearAlgebra) {
  Context ctx;
  RT a = ctx.rand_normal({5, 2, 3});
  RT w = ctx.rand_normal({3, 4});
  EXPECT_EQ(a.matmul(w).shape().str(), "(5, 2, 4)");
  RT img = ctx.rand_normal({1, 3, 8, 8});
  RT k = ctx.rand_normal({6, 3, 3, 3});
  EXPECT_EQ(img.conv2d(k, 1, 1).shape().str(), "(1, 6, 8, 8)");
  EXPECT_THROW(w.matmul(w), UserError);
}

TEST(Sources, SymbolArangeConstant) {
  Context ctx;
  auto [i, I] = ctx.dim("i", "I");
  auto [t, T] = ctx.dim("t", "T");
  RT s = ctx.symbol(T - t);
  EXPECT_EQ(dom_str(s), "t:T");
  EXPECT_EQ(s.dtype(), DType::Int64);
  RT a = ctx.arange(t + 1);
  EXPECT_EQ(a.shape().str(), "(t + 1)");
  RT c = ctx.constant(2.0, {3}, DType::Float32, {ctx.dims()[0]});
  EXPECT_EQ(dom_str(c), "i:I");
  EXPECT_EQ(ctx.graph().op(c.op()).name, "const");
}

TEST(Udf, SourceSinkAndOutputs) {
  Context ctx;
  Dim td = ctx.dim("t", "T");
  auto fn = [](const std::vector<HostTensor>& in, const std::vector<int64_t>& p) {
    return std::vector<HostTensor>{HostTensor(DType::Float32, {2})};
  };
  auto outs = ctx.udf("env", fn, {}, {f32({2})}, {td});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(dom_str(outs[0]), "t:T");
  EXPECT_EQ(outs[0].name(), "env");
  RT y = outs[0] * 2.0;
  auto sink = ctx.udf("log", fn, {y}, {}, {});
  EXPECT_TRUE(sink.empty());
  const ir::OpNode& last = ctx.graph().ops().back();
  EXPECT_EQ(last.kind, OpKind::Udf);
  EXPECT_EQ(last.name, "log");
  EXPECT_EQ(sym::dims_str(last.domain), "t:T");
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Retain, MaterializesPendingIndex) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT x = ctx.rand_normal({2}, {ctx.dims()[0]}).named("x");
  RT r = x.retain();
  EXPECT_EQ(r.op(), x.op());
  RT w = x[slice(0, t + 1)].retain();
  EXPECT_EQ(ctx.graph().op(w.op()).kind, OpKind::Identity);
  EXPECT_EQ(w.shape().str(), "(t + 1, 2)");
  ASSERT_EQ(ctx.retained().size(), 2u);
  EXPECT_EQ(ctx.retained()[1].first, w.op());
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Errors, OpErrorsNameTheLine) {
  Context ctx;
  RT a = ctx.rand_normal({2, 3}).named("a");
  RT b = ctx.rand_normal({4}).named("b");
  int line = __LINE__; EXPECT_THROW(a + b, UserError);
  try {
    RT c = a + b;  // the line below is this + 1
  } catch (const UserError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("ops_test.cpp:" + std::to_string(line + 2)), std::string::npos) << msg;
    EXPECT_NE(msg.find("broadcast"), std::string::npos) << msg;
  }
  try {
    a.transpose(0, 5);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("RT 'a'"), std::string::npos) << e.what();
  }
}

// grad() seeds the loss's gradient with a new constant op before its reverse walk: the walk
// covers only the ops it analysed (an AddressSanitizer run of MuZero's training read one bit past
// that analysis when the graph held a multiple of 64 ops). Every graph size up to 130 ops.
TEST(Grad, EveryGraphSizeWalksOnlyTheAnalysedOps) {
  for (int chain = 1; chain <= 130; ++chain) {
    Context ctx;
    RT w = ctx.placeholder(f32({3}), {}, "w");
    RT x = w;
    while (ctx.graph().num_ops() < static_cast<size_t>(chain)) x = x * 0.5;
    RT loss = x.sum();
    const size_t before = ctx.graph().num_ops();
    std::vector<RT> g = grad(loss, {w});
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g[0].shape().str(), w.shape().str()) << chain;
    EXPECT_GT(ctx.graph().num_ops(), before) << chain;
  }
}

}  // namespace
}  // namespace tempo
