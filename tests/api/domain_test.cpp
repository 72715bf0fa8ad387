// Domain inference, temporal indexing and placeholder branches (no execution).
#include <gtest/gtest.h>

#include "api/tempo.h"
#include "expect_error.h"

namespace tempo {
namespace {

using ir::OpKind;

const ir::Edge& input_edge(const Context& ctx, const RT& r, size_t k) {
  const ir::OpNode& op = ctx.graph().op(r.op());
  return ctx.graph().edge(op.inputs.at(k));
}

std::string dom(const Dims& d) { return sym::dims_str(d); }

TensorType f32(std::initializer_list<int64_t> s) { return TensorType{DType::Float32, Shape(s)}; }

using testing::expect_user_error;

std::string line_of(const Loc& l) { return where(l); }

TEST(Domain, UnionOfInputDomains) {
  Context ctx;
  auto [i, I] = ctx.dim("i", "I");
  auto [t, T] = ctx.dim("t", "T");
  RT a = ctx.rand_uniform({3}, {ctx.dims()[1]});
  RT b = ctx.rand_uniform({3}, {ctx.dims()[0]});
  RT c = a + b;
  EXPECT_EQ(dom(c.domain()), "i:I,t:T");
  EXPECT_EQ(ctx.graph().op(c.op()).name, "add");
  EXPECT_EQ(input_edge(ctx, c, 0).phi.str(), "[t]");
  EXPECT_EQ(input_edge(ctx, c, 1).phi.str(), "[i]");
  EXPECT_EQ(c.shape().str(), "(3)");
}

TEST(Domain, ConstantIndexRemovesDim) {
  Context ctx;
  Dim bd = ctx.dim("b", "B");
  Dim td = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({2}, {bd, td});
  RT y = x[{bd.var, Expr(0)}];
  EXPECT_EQ(dom(y.domain()), "b:B");
  EXPECT_EQ(y.read_phi().str(), "[b, 0]");
  RT z = x[{Expr(1), Expr(0)}];
  EXPECT_TRUE(z.domain().empty());
  RT s = z * 2.0;
  EXPECT_TRUE(ctx.graph().op(s.op()).domain.empty());
  EXPECT_EQ(input_edge(ctx, s, 0).phi.str(), "[1, 0]");
}

TEST(Domain, SliceAddsDynamicDim) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT r = ctx.rand_uniform({}, {ctx.dims()[0]});
  RT g = r[slice(t, T)];
  EXPECT_EQ(g.shape().str(), "(T - t)");
  EXPECT_EQ(dom(g.domain()), "t:T");
  RT s = g.sum(0);
  EXPECT_EQ(input_edge(ctx, s, 0).phi.str(), "[t:T]");
  EXPECT_EQ(s.shape().str(), "()");
  EXPECT_EQ(ctx.graph().input_type(ctx.graph().op(s.op()).inputs[0]).str(), "f32(T - t)");
}

TEST(Domain, WindowPhi) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({4}, {ctx.dims()[0]});
  RT y = x[slice(max(0, t - 3), t + 1)].sum(0);
  EXPECT_TRUE(input_edge(ctx, y, 0).phi.same(sym::seq({slice(max(0, t - 3), t + 1)})))
      << input_edge(ctx, y, 0).phi.str();
  EXPECT_EQ(y.shape().str(), "(4)");
}

TEST(Domain, ConditionIndexing) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({4}, {ctx.dims()[0]});
  RT y = x[t % 2 == 0];
  EXPECT_TRUE(y.cond().defined());
  EXPECT_EQ(y.cond().str(), "t % 2 == 0");
  RT z = y + 1.0;
  EXPECT_EQ(ctx.graph().op(z.op()).cond.str(), "t % 2 == 0");
  // The condition composes with a later point index.
  RT w = z[t - 1];
  EXPECT_EQ(w.cond().str(), "(t - 1) % 2 == 0");
}

TEST(Domain, ComposedPointIndex) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({4}, {ctx.dims()[0]});
  RT y = x[t - 1][t + 1];
  EXPECT_FALSE(y.phi().defined());  // back to the identity
  RT z = x[t - 1][slice(0, t)];     // materialized through an Identity op
  EXPECT_EQ(ctx.graph().op(z.op()).kind, OpKind::Identity);
  EXPECT_EQ(z.read_phi().str(), "[0:t]");
  EXPECT_EQ(z.shape().str(), "(t, 4)");
}

TEST(Placeholder, Counter) {
  Context ctx;
  auto [i, I] = ctx.dim("i", "I");
  RT c = ctx.placeholder(TensorType{DType::Float32, {}}, {ctx.dims()[0]}, "c");
  c[0] = ctx.zeros({});
  c[i + 1] = c[i] + 1.0;
  const ir::OpNode& m = ctx.graph().op(c.op());
  ASSERT_EQ(m.inputs.size(), 2u);
  const ir::Edge& b0 = ctx.graph().edge(m.inputs[0]);
  const ir::Edge& b1 = ctx.graph().edge(m.inputs[1]);
  EXPECT_EQ(b0.phi.str(), "[]");
  EXPECT_EQ(b0.cond.str(), "i == 0");
  EXPECT_EQ(ctx.graph().op(b1.source).kind, OpKind::Add);
  EXPECT_EQ(b1.phi.str(), "[i - 1]");
  EXPECT_EQ(b1.cond.str(), "1 <= i");
  const ir::OpNode& add = ctx.graph().op(b1.source);
  EXPECT_EQ(ctx.graph().edge(add.inputs[0]).source, c.op());
  EXPECT_EQ(ctx.graph().edge(add.inputs[0]).phi.str(), "[i]");
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Placeholder, Ema) {
  Context ctx;
  auto [i, I] = ctx.dim("i", "I");
  Dims d{ctx.dims()[0]};
  RT x = ctx.rand_uniform({3}, d);
  RT e = ctx.placeholder(f32({3}), d, "e");
  e[0] = x[0];
  e[i + 1] = 0.9 * e[i] + 0.1 * x[i + 1];
  const ir::OpNode& m = ctx.graph().op(e.op());
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(ctx.graph().edge(m.inputs[0]).phi.str(), "[0]");
  EXPECT_EQ(ctx.graph().edge(m.inputs[0]).cond.str(), "i == 0");
  EXPECT_EQ(ctx.graph().edge(m.inputs[1]).phi.str(), "[i - 1]");
  EXPECT_EQ(ctx.graph().edge(m.inputs[1]).cond.str(), "1 <= i");
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Placeholder, Observations) {
  Context ctx;
  Dim bd = ctx.dim("b", "B"), id = ctx.dim("i", "I"), td = ctx.dim("t", "T");
  Expr b = bd.var, i = id.var, t = td.var;
  RT reset = ctx.rand_uniform({4}, {bd, id});
  RT o = ctx.placeholder(f32({4}), {bd, id, td}, "o");
  RT a = (o * 2.0).named("a");
  o[{b, i, 0}] = reset;
  o[{b, i, t + 1}] = a[{b, i, t}].tanh();
  const ir::OpNode& m = ctx.graph().op(o.op());
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(ctx.graph().edge(m.inputs[0]).phi.str(), "[b, i]");
  EXPECT_EQ(ctx.graph().edge(m.inputs[0]).cond.str(), "t == 0");
  EXPECT_EQ(ctx.graph().edge(m.inputs[1]).phi.str(), "[b, i, t - 1]");
  EXPECT_EQ(ctx.graph().edge(m.inputs[1]).cond.str(), "1 <= t");
  EXPECT_NO_THROW(ir::validate(ctx.graph()));
}

TEST(Placeholder, NeverDefined) {
  Context ctx;
  Dim td = ctx.dim("t", "T");
  Loc here = Loc::current(); RT o = ctx.placeholder(f32({2}), {td}, "o");
  RT y = o * 2.0;
  expect_user_error([&] { ir::validate(ctx.graph()); },
                    {"RT 'o'", line_of(here), "never defined"});
}

TEST(Placeholder, TypeMismatchNamesBothLines) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  Loc decl = Loc::current(); RT o = ctx.placeholder(f32({2}), {ctx.dims()[0]}, "o");
  Loc use = Loc::current(); expect_user_error([&] { o[0] = ctx.zeros({3}); }, {"RT 'o'", line_of(decl), line_of(use), "f32(3)", "f32(2)"});
}

TEST(Placeholder, SymbolicShapesAndNegativeOffsets) {
  Context ctx;
  auto [t, T] = ctx.dim("t", "T");
  Dims d{ctx.dims()[0]};
  RT z = ctx.zeros({T, 2});
  EXPECT_EQ(z.shape().str(), "(T, 2)");
  RT x = ctx.rand_uniform({3}, d);
  RT o = ctx.placeholder(f32({3}), d, "o");
  o[t] = x[t + 1];  // a look-ahead: exists for t < T - 1
  const ir::Edge& b = ctx.graph().edge(ctx.graph().op(o.op()).inputs[0]);
  EXPECT_EQ(b.phi.str(), "[t + 1]");
  EXPECT_FALSE(b.cond.defined());
  RT p = ctx.placeholder(f32({3}), d, "p");
  p[t - 1] = x;
  const ir::Edge& c = ctx.graph().edge(ctx.graph().op(p.op()).inputs[0]);
  EXPECT_EQ(c.phi.str(), "[t + 1]");
  EXPECT_EQ(c.cond.str(), "t < T - 1");
}

TEST(Placeholder, BranchErrors) {
  Context ctx;
  Dim bd = ctx.dim("b", "B"), td = ctx.dim("t", "T");
  Expr b = bd.var, t = td.var;
  RT o = ctx.placeholder(f32({}), {td}, "o");
  RT v = ctx.rand_uniform({}, {bd, td});
  // The value varies in b, which the placeholder does not have.
  Loc l1 = Loc::current(); expect_user_error([&] { o[t] = v; }, {"RT 'o'", line_of(l1), "dimension b"});
  RT w = ctx.rand_uniform({}, {td});
  // Assigned at t == 0 only, but the value varies in t.
  Loc l2 = Loc::current(); expect_user_error([&] { o[0] = w; }, {line_of(l2), "varies in t"});
  Loc l3 = Loc::current(); expect_user_error([&] { o[2 * t] = w; }, {line_of(l3), "t + constant"});
  Loc l4 = Loc::current(); expect_user_error([&] { o[t < 3] = w; }, {line_of(l4), "condition"});
}

TEST(Errors, WrongNumberOfEntries) {
  Context ctx;
  Dim bd = ctx.dim("b", "B"), td = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({2}, {bd, td}).named("x");
  Loc here = Loc::current(); expect_user_error([&] { RT y = x[td.var]; }, {"RT 'x'", line_of(here), "2 dimensions"});
}

TEST(Errors, UnknownVariable) {
  Context ctx;
  Dim td = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({2}, {td}).named("x");
  Loc here = Loc::current(); expect_user_error([&] { RT y = x[Expr::var("s")]; }, {"RT 'x'", line_of(here), "s"});
}

TEST(Errors, BooleanWhereIndexExpected) {
  Context ctx;
  Dim bd = ctx.dim("b", "B"), td = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({2}, {bd, td}).named("x");
  Loc here = Loc::current(); expect_user_error([&] { RT y = x[{bd.var, td.var < 3}]; }, {"RT 'x'", line_of(here), "boolean"});
}

TEST(Errors, AssignToNonPlaceholder) {
  Context ctx;
  Dim td = ctx.dim("t", "T");
  RT x = ctx.rand_uniform({2}, {td}).named("x");
  Loc here = Loc::current(); expect_user_error([&] { x[td.var] = ctx.zeros({2}); }, {"RT 'x'", line_of(here), "placeholder"});
}

TEST(Errors, DuplicateDim) {
  Context ctx;
  ctx.dim("t", "T");
  EXPECT_THROW(ctx.dim("t", "S"), UserError);
  EXPECT_THROW(ctx.dim("s", "T"), UserError);
}

}  // namespace
}  // namespace tempo
