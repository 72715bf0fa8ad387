#include "symbolic/expr.h"

#include <gtest/gtest.h>

#include <unordered_set>

#include "util/error.h"

namespace tempo::sym {
namespace {

const Dims kDims = parse_dims("b:B,t:T");
const Expr b = kDims[0].var, B = kDims[0].bound, t = kDims[1].var, T = kDims[1].bound;

TEST(Expr, Leaves) {
  EXPECT_TRUE(Expr(3).is_const(3));
  EXPECT_TRUE(Expr::boolean(true).is_bool_const());
  EXPECT_TRUE(t.is_var());
  EXPECT_TRUE(T.is_bound_symbol());
  EXPECT_FALSE(Expr::var("t").same(Expr::bound("t")));
  EXPECT_TRUE(Expr::var("t").same(t));
  EXPECT_EQ(t.type(), Type::Int);
  EXPECT_EQ((t < T).type(), Type::Bool);
  EXPECT_EQ(slice(0, t).type(), Type::Slice);
  EXPECT_EQ(seq({t}).type(), Type::Seq);
  EXPECT_FALSE(Expr().defined());
  EXPECT_EQ(Expr().str(), "<undefined>");
}

TEST(Expr, ConstantFolding) {
  EXPECT_TRUE((Expr(2) + 3).same(Expr(5)));
  EXPECT_TRUE((Expr(2) * 3 - 10).same(Expr(-4)));
  EXPECT_TRUE(floordiv(Expr(-7), 2).same(Expr(-4)));
  EXPECT_TRUE((Expr(-7) % 2).same(Expr(1)));
  EXPECT_TRUE((Expr(7) % -2).same(Expr(-1)));
  EXPECT_TRUE(min(Expr(3), 4).same(Expr(3)));
  EXPECT_TRUE(max({Expr(3), Expr(9), Expr(4)}).same(Expr(9)));
  EXPECT_TRUE((Expr(3) < 4).same(Expr::boolean(true)));
  EXPECT_TRUE((Expr(3) == 4).same(Expr::boolean(false)));
  EXPECT_TRUE((Expr::boolean(true) && (t < T)).same(t < T));
  EXPECT_TRUE((Expr::boolean(false) && (t < T)).same(Expr::boolean(false)));
  EXPECT_TRUE((Expr::boolean(true) || (t < T)).same(Expr::boolean(true)));
  EXPECT_TRUE((!Expr::boolean(true)).same(Expr::boolean(false)));
}

TEST(Expr, LocalCanonicalization) {
  // Flattening, identity elements, constants gathered (last in sums, first in products).
  Expr s = t + 1 + b + 2;
  EXPECT_EQ(s.op(), Op::Add);
  EXPECT_EQ(s.size(), 3u);
  EXPECT_TRUE(s.arg(2).is_const(3));
  EXPECT_TRUE((t + 0).same(t));
  EXPECT_TRUE((t * 1).same(t));
  EXPECT_TRUE((t * 0).same(Expr(0)));
  Expr p = t * 2 * b * 3;
  EXPECT_TRUE(p.arg(0).is_const(6));
  EXPECT_TRUE(floordiv(t, 1).same(t));
  EXPECT_TRUE((-(-t)).same(t));
  EXPECT_TRUE((-(3 * t)).same(-3 * t));
  EXPECT_TRUE((!!(t < T)).same(t < T));
  EXPECT_TRUE((t > b).same(b < t));
  EXPECT_TRUE((t >= b).same(b <= t));
  EXPECT_TRUE(min(min(t, b), T).same(min({t, b, T})));
  // No range-aware rewriting at construction.
  EXPECT_FALSE((t - t).same(Expr(0)));
}

TEST(Expr, Printing) {
  EXPECT_EQ((t + 1).str(), "t + 1");
  EXPECT_EQ((t - 1).str(), "t - 1");
  EXPECT_EQ((T - t - 1).str(), "T - t - 1");
  EXPECT_EQ((-t).str(), "-t");
  EXPECT_EQ((-t + b).str(), "-t + b");
  EXPECT_EQ((t - 3 * b).str(), "t - 3*b");
  EXPECT_EQ((2 * (t + 1)).str(), "2*(t + 1)");
  EXPECT_EQ((t - (b + 1)).str(), "t - (b + 1)");
  EXPECT_EQ(floordiv(t + 1, 2).str(), "(t + 1) // 2");
  EXPECT_EQ(((t + 1) % 5 == 0).str(), "(t + 1) % 5 == 0");
  EXPECT_EQ(min(t + 5, T).str(), "min(t + 5, T)");
  EXPECT_EQ(slice(max(0, t - 3), t + 1).str(), "max(t - 3, 0):t + 1");  // constants go last in min/max
  EXPECT_EQ(slice(0, T, 2).str(), "0:T:2");
  EXPECT_EQ(seq({b, slice(0, t + 1)}).str(), "[b, 0:t + 1]");
  EXPECT_EQ(((t < T) && ((b == 0) || (b == 1))).str(), "t < T && (b == 0 || b == 1)");
  EXPECT_EQ((!(t < T)).str(), "!(t < T)");
  std::ostringstream os;
  os << t + 1;
  EXPECT_EQ(os.str(), "t + 1");
}

TEST(Expr, EqualityHashAndOrder) {
  Expr a = min(t + 5, T), c = min(t + 5, T);
  EXPECT_TRUE(a.same(c));
  EXPECT_EQ(a.hash(), c.hash());
  EXPECT_EQ(Expr::compare(a, c), 0);
  EXPECT_FALSE(a.same(min(t + 4, T)));
  EXPECT_EQ(Expr::compare(t, b), -Expr::compare(b, t));
  EXPECT_NE(Expr::compare(t, b), 0);
  std::unordered_set<Expr, ExprHash, ExprEq> set{a, c, t, t + 1};
  EXPECT_EQ(set.size(), 3u);
}

TEST(Expr, Errors) {
  EXPECT_THROW(floordiv(t, 0), UserError);
  EXPECT_THROW(t % 0, UserError);
  EXPECT_THROW(t + (t < T), UserError);
  EXPECT_THROW(!t, UserError);
  EXPECT_THROW(slice(0, t, 0), UserError);
  EXPECT_THROW(slice(0, t < T), UserError);
  EXPECT_THROW(seq({t < T}), UserError);
  EXPECT_THROW(min(std::vector<Expr>{}), UserError);
  EXPECT_THROW(t + Expr(), UserError);
  EXPECT_THROW(parse_dims("t"), UserError);
  EXPECT_THROW(parse_dims("t:T,:B"), UserError);
}

TEST(Expr, Queries) {
  Expr e = min(t + 5, T) - b * t;
  auto syms = free_symbols(e);
  ASSERT_EQ(syms.size(), 3u);
  EXPECT_TRUE(syms[0].same(t));
  EXPECT_TRUE(depends_on(e, T));
  EXPECT_FALSE(depends_on(e, B));
  EXPECT_TRUE(substitute(t + 1, {{t, t - 1}}).same(t));
  EXPECT_TRUE(substitute(min(t, T), {{t, Expr(3)}, {T, Expr(2)}}).same(Expr(2)));
  EXPECT_EQ(dims_str(parse_dims("b:B, t:T")), "b:B,t:T");
  int n = 0;
  visit(e, [&](const Expr&) { ++n; });
  EXPECT_GT(n, 5);
}

}  // namespace
}  // namespace tempo::sym
