// The executor on hand-built graphs and schedules (no scheduler involved), with the LibTorch
// backend behind its header-only interface.
#include "runtime/executor.h"

#include <gtest/gtest.h>

#include "backend/libtorch_backend.h"
#include "util/error.h"

namespace tempo::runtime {
namespace {

using ir::DType;
using ir::HostTensor;
using ir::OpKind;
using schedule::Stmt;
using schedule::StmtKind;
using schedule::StmtPtr;

ir::TensorType f32(std::vector<Expr> shape = {}) {
  return {DType::Float32, ir::Shape(shape)};
}

ir::OpId add_op(ir::Graph& g, OpKind kind, Dims domain, std::vector<ir::TensorType> outs,
                ir::Attrs attrs = {}, const std::string& name = "") {
  ir::OpNode op;
  op.kind = kind;
  op.domain = std::move(domain);
  op.outputs = std::move(outs);
  op.attrs = std::move(attrs);
  op.name = name.empty() ? ir::op_kind_name(kind) : name;
  return g.add_op(std::move(op));
}

ir::OpId constant(ir::Graph& g, double v) {
  ir::Attrs a;
  a.scalar = v;
  return add_op(g, OpKind::Const, {}, {f32()}, a);
}

// A source over `domain` producing f(point) as a float scalar.
ir::OpId source(ir::Graph& g, Dims domain, std::function<double(const std::vector<int64_t>&)> f) {
  auto udf = std::make_shared<ir::Udf>();
  udf->name = "src";
  udf->outputs = {f32()};
  udf->fn = [f](const std::vector<HostTensor>&, const std::vector<int64_t>& p) {
    return std::vector<HostTensor>{HostTensor::scalar(f(p))};
  };
  ir::Attrs a;
  a.udf = udf;
  return add_op(g, OpKind::Udf, std::move(domain), {f32()}, a, "x");
}

StmtPtr exec(ir::OpId op, std::vector<Expr> point) {
  auto s = std::make_shared<Stmt>();
  s->kind = StmtKind::Exec;
  s->op = op;
  s->point = std::move(point);
  return s;
}
StmtPtr dealloc(ir::OpId op, std::vector<Expr> point) {
  auto s = std::make_shared<Stmt>();
  s->kind = StmtKind::Dealloc;
  s->op = op;
  s->point = std::move(point);
  return s;
}
StmtPtr seq(std::vector<StmtPtr> body) {
  auto s = std::make_shared<Stmt>();
  s->kind = StmtKind::Seq;
  s->body = std::move(body);
  return s;
}
// for (it = 0; it < n; it += 1)
StmtPtr loop(const Expr& it, const Expr& n, std::vector<StmtPtr> body) {
  auto s = std::make_shared<Stmt>();
  s->kind = StmtKind::For;
  s->iterator = it;
  s->init = Expr(0);
  s->cond = it < n;
  s->step = Expr(1);
  s->body = std::move(body);
  return s;
}

double value_at(Executor& ex, Backend& b, ir::OpId op, std::vector<int64_t> p) {
  HostTensor h = b.to_host(ex.read(op, 0, p));
  EXPECT_EQ(h.numel(), 1);
  return h.at(0);
}

struct Fixture : ::testing::Test {
  Dim t{"t", "T"};
  Dim c0{"c0", "C0"};
  std::unique_ptr<Backend> backend = backend::make_libtorch_backend("cpu");
  schedule::Schedule sched(StmtPtr root) {
    schedule::Schedule s;
    s.root = root;
    s.iterators = {c0};
    return s;
  }
};

TEST_F(Fixture, AffineMapOverTime) {
  // y[t] = x[t] * 2 + 1 with x[t] = t + 0.5
  ir::Graph g;
  ir::OpId x = source(g, {t}, [](auto& p) { return p[0] + 0.5; });
  ir::OpId two = constant(g, 2), one = constant(g, 1);
  ir::OpId m = add_op(g, OpKind::Mul, {t}, {f32()});
  g.add_edge(m, x, 0, sym::seq({t.var}));
  g.add_edge(m, two, 0, sym::seq({}));
  ir::OpId y = add_op(g, OpKind::Add, {t}, {f32()}, {}, "y");
  g.add_edge(y, m, 0, sym::seq({t.var}));
  g.add_edge(y, one, 0, sym::seq({}));
  auto s = sched(seq({exec(two, {}), exec(one, {}),
                      loop(c0.var, t.bound,
                           {exec(x, {c0.var}), exec(m, {c0.var}), dealloc(x, {c0.var}),
                            exec(y, {c0.var}), dealloc(m, {c0.var})})}));
  Executor ex(g, s, *backend, {t});
  ex.run({{t.bound, 5}});
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_DOUBLE_EQ(value_at(ex, *backend, y, {i}), 2 * (i + 0.5) + 1);
  EXPECT_EQ(ex.ops_executed(), 2 + 3 * 5);
  // y's five scalars and the two constants stay; x and m were freed.
  EXPECT_EQ(ex.memory().live_bytes, 4 * 7);
  EXPECT_LE(ex.memory().peak_bytes, 4 * 9);
  EXPECT_THROW(ex.read(x, 0, {2}), UserError);  // deallocated
  // A second run with another bound starts from empty stores.
  ex.run({{t.bound, 3}});
  EXPECT_DOUBLE_EQ(value_at(ex, *backend, y, {2}), 6.0);
  EXPECT_THROW(ex.read(y, 0, {3}), UserError);  // outside the domain
}

TEST_F(Fixture, MergeRecurrence) {
  // c[0] = 0; c[i] = c[i - 1] + 1
  Dim i{"i", "I"};
  ir::Graph g;
  ir::OpId zero = constant(g, 0), one = constant(g, 1);
  ir::OpId c = add_op(g, OpKind::Merge, {i}, {f32()}, {}, "c");
  ir::OpId inc = add_op(g, OpKind::Add, {i}, {f32()});
  g.add_edge(c, zero, 0, sym::seq({}), i.var == Expr(0));
  g.add_edge(c, inc, 0, sym::seq({i.var - 1}), i.var >= Expr(1));
  g.add_edge(inc, c, 0, sym::seq({i.var}));
  g.add_edge(inc, one, 0, sym::seq({}));
  auto s = sched(seq({exec(zero, {}), exec(one, {}),
                      loop(c0.var, i.bound, {exec(c, {c0.var}), exec(inc, {c0.var})})}));
  Executor ex(g, s, *backend, {i});
  ex.run({{i.bound, 6}});
  for (int64_t k = 0; k < 6; ++k) EXPECT_DOUBLE_EQ(value_at(ex, *backend, c, {k}), k);
}

TEST_F(Fixture, MergeWithoutActiveBranchIsUserError) {
  Dim i{"i", "I"};
  ir::Graph g;
  ir::OpId zero = constant(g, 0);
  ir::OpId c = add_op(g, OpKind::Merge, {i}, {f32()}, {}, "c");
  g.add_edge(c, zero, 0, sym::seq({}), i.var == Expr(0));
  auto s = sched(seq({exec(zero, {}), loop(c0.var, i.bound, {exec(c, {c0.var})})}));
  Executor ex(g, s, *backend, {i});
  try {
    ex.run({{i.bound, 3}});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no branch defined at point [1]"), std::string::npos)
        << e.what();
  }
}

TEST_F(Fixture, PrefixSumThroughSliceRead) {
  // s[t] = sum(x[0:t + 1]);  e[t] = sum(x[0:t]) (empty at t = 0)
  ir::Graph g;
  ir::OpId x = source(g, {t}, [](auto& p) { return p[0] + 0.5; });
  ir::Attrs sum;
  sum.ints = {0};
  ir::OpId s = add_op(g, OpKind::Sum, {t}, {f32()}, sum, "s");
  g.add_edge(s, x, 0, sym::seq({sym::slice(0, t.var + 1)}));
  ir::OpId e = add_op(g, OpKind::Sum, {t}, {f32()}, sum, "e");
  g.add_edge(e, x, 0, sym::seq({sym::slice(0, t.var)}));
  auto sc = sched(loop(c0.var, t.bound, {exec(x, {c0.var}), exec(e, {c0.var}), exec(s, {c0.var})}));
  Executor ex(g, sc, *backend, {t});
  ex.run({{t.bound, 6}});
  double acc = 0;
  for (int64_t k = 0; k < 6; ++k) {
    EXPECT_DOUBLE_EQ(value_at(ex, *backend, e, {k}), acc);
    acc += k + 0.5;
    EXPECT_DOUBLE_EQ(value_at(ex, *backend, s, {k}), acc);
  }
}

TEST_F(Fixture, TwoSlicesStackInnermostFirst) {
  Dim i{"i", "I"};
  Dim c1{"c1", "C1"};
  ir::Graph g;
  ir::OpId x = source(g, {i, t}, [](auto& p) { return 10.0 * p[0] + p[1]; });
  ir::OpId all = add_op(g, OpKind::Identity, {}, {f32({i.bound, t.bound})}, {}, "all");
  g.add_edge(all, x, 0, sym::seq({sym::slice(0, i.bound), sym::slice(0, t.bound)}));
  // The point in the middle selects one row: x[1, 0:T].
  ir::OpId row = add_op(g, OpKind::Identity, {}, {f32({t.bound})}, {}, "row");
  g.add_edge(row, x, 0, sym::seq({Expr(1), sym::slice(0, t.bound)}));
  schedule::Schedule s;
  s.root = seq({loop(c0.var, i.bound, {loop(c1.var, t.bound, {exec(x, {c0.var, c1.var})})}),
                exec(all, {}), exec(row, {})});
  s.iterators = {c0, c1};
  Executor ex(g, s, *backend, {i, t});
  ex.run({{i.bound, 3}, {t.bound, 4}});
  HostTensor h = backend->to_host(ex.read(all, 0, {}));
  ASSERT_EQ(h.shape, (std::vector<int64_t>{3, 4}));
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 4; ++b) EXPECT_DOUBLE_EQ(h.at(a * 4 + b), 10.0 * a + b);
  HostTensor r = backend->to_host(ex.read(row, 0, {}));
  ASSERT_EQ(r.shape, (std::vector<int64_t>{4}));
  EXPECT_DOUBLE_EQ(r.at(3), 13.0);
}

TEST_F(Fixture, EmptyNestedSliceHasElementShape) {
  Dim i{"i", "I"};
  ir::Graph g;
  ir::OpId x = source(g, {i, t}, [](auto& p) { return 1.0; });
  // Reads x[0:0, 0:T]: shape (0, T).
  ir::OpId none = add_op(g, OpKind::Identity, {}, {f32({Expr(0), t.bound})}, {}, "none");
  g.add_edge(none, x, 0, sym::seq({sym::slice(0, 0), sym::slice(0, t.bound)}));
  auto s = sched(seq({exec(none, {})}));
  Executor ex(g, s, *backend, {i, t});
  ex.run({{i.bound, 2}, {t.bound, 5}});
  HostTensor h = backend->to_host(ex.read(none, 0, {}));
  EXPECT_EQ(h.shape, (std::vector<int64_t>{0, 5}));
}

TEST_F(Fixture, ReadBeforeWriteIsInternalError) {
  ir::Graph g;
  ir::OpId x = source(g, {t}, [](auto& p) { return 1.0; });
  ir::OpId y = add_op(g, OpKind::Neg, {t}, {f32()}, {}, "y");
  g.add_edge(y, x, 0, sym::seq({t.var}));
  auto s = sched(loop(c0.var, t.bound, {exec(y, {c0.var}), exec(x, {c0.var})}));
  Executor ex(g, s, *backend, {t});
  try {
    ex.run({{t.bound, 2}});
    FAIL();
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  }
}

TEST_F(Fixture, MissingBoundIsUserError) {
  ir::Graph g;
  ir::OpId x = source(g, {t}, [](auto& p) { return 1.0; });
  auto s = sched(loop(c0.var, t.bound, {exec(x, {c0.var})}));
  Executor ex(g, s, *backend);
  try {
    ex.run({});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("bound T has no value"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ex.run({{t.bound, 0}}), UserError);
}

TEST_F(Fixture, OpConditionSkipsPoints) {
  ir::Graph g;
  ir::OpId x = source(g, {t}, [](auto& p) { return p[0]; });
  g.op(x).cond = t.var % 2 == Expr(0);
  auto s = sched(loop(c0.var, t.bound, {exec(x, {c0.var})}));
  Executor ex(g, s, *backend, {t});
  ex.run({{t.bound, 6}});
  EXPECT_EQ(ex.ops_executed(), 3);
  EXPECT_DOUBLE_EQ(value_at(ex, *backend, x, {4}), 4.0);
  EXPECT_THROW(ex.read(x, 0, {3}), UserError);
}

}  // namespace
}  // namespace tempo::runtime
