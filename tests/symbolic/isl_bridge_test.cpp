#include "symbolic/isl_bridge.h"

#include <gtest/gtest.h>

#include <isl/ast_build.h>

#include "symbolic/parse.h"
#include "symbolic/random_dependence.h"
#include "util/error.h"

namespace tempo::sym {
namespace {

using testing::Env;
using testing::Point;

const Dims kT = parse_dims("t:T");
const Dims kIT = parse_dims("i:I,t:T");
const Dims kBIT = parse_dims("b:B,i:I,t:T");

Expr P(const std::string& s, const Dims& d = kBIT) { return parse(s, d); }

// Expects f to throw a UserError whose message contains `needle`.
template <typename F>
void expect_user_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected a UserError mentioning `" << needle << "`";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(IslBridge, DomainIsTheBoxOfItsDims) {
  IslContext ctx;
  isl::set d = domain_to_isl(ctx, "A", kIT);
  isl::set want(ctx.ctx(), "[I, T] -> { A[i, t] : I >= 1 and T >= 1 and 0 <= i < I and 0 <= t < T }");
  EXPECT_TRUE(d.is_equal(want)) << d;
}

TEST(IslBridge, EdgeOfAWindow) {
  IslContext ctx;
  isl::map m = edge_to_isl(ctx, "sink", kT, "source", kT, P("t:min(t+3,T)", kT));
  isl::map want(ctx.ctx(), "[T] -> { sink[t] -> source[q] : T >= 1 and 0 <= t < T and t <= q < t + 3 and q < T }");
  EXPECT_TRUE(m.is_equal(want)) << m;
}

TEST(IslBridge, EdgeOfMaxMinSliceAndShift) {
  IslContext ctx;
  isl::map m = edge_to_isl(ctx, "sink", kT, "source", kT, P("max(0,t-3):t+1", kT));
  isl::map want(ctx.ctx(), "[T] -> { sink[t] -> source[q] : 0 <= t < T and t - 3 <= q <= t and q >= 0 }");
  EXPECT_TRUE(m.is_equal(want)) << m;
  isl::map s = edge_to_isl(ctx, "sink", kT, "source", kT, P("t+3", kT));
  isl::map s_want(ctx.ctx(), "[T] -> { sink[t] -> source[t + 3] : 0 <= t and t + 3 < T }");
  EXPECT_TRUE(s.is_equal(s_want)) << s;
}

TEST(IslBridge, EdgeBetweenDifferentDomainsWithCondition) {
  IslContext ctx;
  Dims source = parse_dims("b:B,i:I");
  isl::map m = edge_to_isl(ctx, "step", kBIT, "param", source, P("[b, i - 1]"), P("i > 0 && t % 2 == 0"));
  isl::map want(ctx.ctx(),
                "[B, I, T] -> { step[b, i, t] -> param[b, i - 1] : 0 <= b < B and 1 <= i < I and 0 <= t < T "
                "and t mod 2 = 0 }");
  EXPECT_TRUE(m.is_equal(want)) << m;
}

TEST(IslBridge, StridedSliceModAndFloorDivision) {
  IslContext ctx;
  isl::map m = edge_to_isl(ctx, "sink", kT, "source", kT, P("t//2:T:3", kT));
  isl::map want(ctx.ctx(),
                "[T] -> { sink[t] -> source[q] : 0 <= t < T and q < T and exists k : k >= 0 and "
                "q = floor(t/2) + 3k }");
  EXPECT_TRUE(m.is_equal(want)) << m;
  isl::map n = edge_to_isl(ctx, "sink", kT, "source", kT, P("(t + 1) % 3", kT));
  isl::map n_want(ctx.ctx(), "[T] -> { sink[t] -> source[(t + 1) mod 3] : 0 <= t < T and (t + 1) mod 3 < T }");
  EXPECT_TRUE(n.is_equal(n_want)) << n;
  // A negative divisor rounds towards -infinity and a modulo takes the divisor's sign.
  isl::map neg = edge_to_isl(ctx, "sink", kT, "source", kT, P("T - 1 + t % -3", kT));
  isl::map neg_want(ctx.ctx(), "[T] -> { sink[t] -> source[T - 1 - ((-t) mod 3)] : 0 <= t < T and T - 1 - ((-t) mod 3) >= 0 }");
  EXPECT_TRUE(neg.is_equal(neg_want)) << neg;
}

TEST(IslBridge, ErrorsNameTheOffendingExpression) {
  IslContext ctx;
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("t*t", kT)); }, "`t*t` is not affine");
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("t*T + 1", kT)); }, "`t*T` is not affine");
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("t // T", kT)); }, "divisor `T`");
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("t % (T - 1)", kT)); }, "divisor `T - 1`");
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("t:T:T", kT)); }, "slice step `T`");
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("[t, 0]", kT)); }, "has 2 entries");
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("t < 3", kT)); }, "is a condition");
  // i is no variable of the sink [t].
  expect_user_error([&] { edge_to_isl(ctx, "a", kT, "b", kT, P("i", kIT)); }, "unbound symbol `i`");
  expect_user_error([&] { expr_to_pw_aff(ctx, P("i + 1", kIT), kT); }, "unbound symbol `i`");
  expect_user_error([&] { condition_to_isl(ctx, P("t + 1", kT), kT); }, "where a condition is expected");
}

TEST(IslBridge, PwAffBackToExpr) {
  IslContext ctx;
  auto round = [&](const std::string& s) { return pw_aff_to_expr(expr_to_pw_aff(ctx, P(s, kT), kT), kT).str(); };
  EXPECT_EQ(round("t + 3"), "t + 3");
  EXPECT_EQ(round("T - 1 - t"), "T - t - 1");
  EXPECT_EQ(round("min(t + 4, T)"), "min(t + 4, T)");
  EXPECT_EQ(round("max(0, t - 3)"), "max(t - 3, 0)");
  EXPECT_EQ(round("min(T, t)"), "t");  // within the range t < T
  EXPECT_EQ(round("(t + 1) % 3"), "(t + 1) % 3");
  EXPECT_EQ(round("t // 4"), "t // 4");
  EXPECT_EQ(round("max(0, min(t - 2, T - 5))"), "max(min(t - 2, T - 5), 0)");
  isl::pw_aff text(ctx.ctx(), "[T] -> { [t] -> [(t + 4)] : t <= T - 5; [t] -> [(T)] : t >= T - 4 }");
  EXPECT_EQ(pw_aff_to_expr(text, kT).str(), "min(t + 4, T)");
  // A rational piece that is integral where it applies is its floor.
  isl::pw_aff half(ctx.ctx(), "[T] -> { [t] -> [(t/2)] : t mod 2 = 0 }");
  EXPECT_EQ(pw_aff_to_expr(half, kT).str(), "t // 2");
  isl::pw_aff rational(ctx.ctx(), "[T] -> { [t] -> [(t/2)] }");
  expect_user_error([&] { pw_aff_to_expr(rational, kT); }, "not integral");
  isl::pw_aff odd(ctx.ctx(), "[T] -> { [t] -> [(0)] : t = 0; [t] -> [(t + 3)] : t > 0 }");
  expect_user_error([&] { pw_aff_to_expr(odd, kT); }, "cannot be written with min and max");
}

TEST(IslBridge, AstExpressions) {
  IslContext ctx;
  isl::set context(ctx.ctx(), "[T, t] -> { [] : T >= 1 and 0 <= t < T }");
  isl::ast_build build = isl::ast_build::from_context(context);
  std::vector<std::pair<std::string, Expr>> ids = {{"t", Expr::var("t")}, {"T", Expr::bound("T")}};
  // The loop bound of a generated AST: for (c0 = 0; c0 <= min(T - 1, 10); c0 += 1).
  isl::ast_build loops = isl::ast_build::from_context(isl::set(ctx.ctx(), "[T] -> { : T >= 1 }"));
  isl::ast_node node = loops.node_from_schedule_map(
      isl::union_map(ctx.ctx(), "[T] -> { S[t] -> [t] : 0 <= t < T and t <= 10 }"));
  isl::ast_expr cond = isl::manage(isl_ast_node_for_get_cond(node.get()));
  Expr loop = ast_expr_to_expr(cond, {{"c0", Expr::var("t")}, {"T", Expr::bound("T")}});
  EXPECT_EQ(loop.str(), "t <= min(T - 1, 10)");
  isl::pw_aff pa(ctx.ctx(), "[T, t] -> { [] -> [(min(t + 4, T))] }");
  isl::pw_aff fl(ctx.ctx(), "[T, t] -> { [] -> [(2 * t - floor((t + 1) / 3))] }");
  Expr f = ast_expr_to_expr(build.expr_from(fl), ids);
  EXPECT_TRUE(logically_equal(f, P("2 * t - (t + 1) // 3", kT), kT)) << f;
  // isl's conditional expressions have no integer counterpart.
  isl::pw_aff sel(ctx.ctx(), "[T, t] -> { [] -> [(0)] : t = 0; [] -> [(t + 3)] : t > 0 }");
  expect_user_error([&] { ast_expr_to_expr(build.expr_from(sel), ids); }, "needs a conditional");
  isl::set s(ctx.ctx(), "[T, t] -> { [] : t mod 4 = 1 or t >= T - 2 }");
  Expr c = ast_expr_to_expr(build.expr_from(s), ids);
  EXPECT_TRUE(logically_equal(c, P("t % 4 == 1 || t + 2 >= T", kT), kT)) << c;
  expect_user_error([&] { ast_expr_to_expr(build.expr_from(fl), {{"T", Expr::bound("T")}}); }, "unknown identifier `t`");
}

TEST(IslBridge, LogicallyEqual) {
  EXPECT_TRUE(logically_equal(P("min(t+4,T)", kT), P("min(T,4+t)", kT), kT));
  EXPECT_TRUE(logically_equal(P("min(t, T)", kT), P("t", kT), kT));
  EXPECT_TRUE(logically_equal(P("t % 3", kT), P("t - 3 * (t // 3)", kT), kT));
  EXPECT_FALSE(logically_equal(P("min(t+4,T)", kT), P("t+4", kT), kT));
  EXPECT_FALSE(logically_equal(P("t", kT), P("t + 1", kT), kT));
  EXPECT_TRUE(logically_equal(P("t < T", kT), Expr::boolean(true), kT));
  EXPECT_TRUE(logically_equal(P("t % 5 == 0 && t % 3 == 0", kT), P("t % 15 == 0", kT), kT));
  EXPECT_FALSE(logically_equal(P("t % 5 == 0", kT), P("t % 15 == 0", kT), kT));
  // Slices compare as the sets of integers they denote.
  EXPECT_TRUE(logically_equal(P("t:min(t+4,T)", kT), P("t:min(T,4+t)", kT), kT));
  EXPECT_TRUE(logically_equal(P("0:0", kT), P("5:3", kT), kT));
  EXPECT_TRUE(logically_equal(P("0:5:2", kT), P("0:6:2", kT), kT));
  EXPECT_FALSE(logically_equal(P("0:5", kT), P("0:6", kT), kT));
  // Sequences entry by entry; types must agree.
  EXPECT_TRUE(logically_equal(P("[i, min(t, T - 1):T]", kIT), P("[i + 0, t:T]", kIT), kIT));
  EXPECT_FALSE(logically_equal(P("[i, t]", kIT), P("[i, t, 0]", kIT), kIT));
  EXPECT_FALSE(logically_equal(P("t", kT), P("t:t+1", kT), kT));
}

TEST(IslBridge, SimplifyCondition) {
  auto simp = [](const std::string& s, const Dims& d = kT) { return simplify_condition(P(s, d), d).str(); };
  EXPECT_EQ(simp("t%5==0 && t%3==0"), "t % 15 == 0");
  EXPECT_EQ(simp("t < T"), "true");
  EXPECT_EQ(simp("t >= T"), "false");
  EXPECT_EQ(simp("t >= 0 && t % 2 == 0"), "t % 2 == 0");
  EXPECT_EQ(simp("t == 0 || t == 1 || t == 2"), "t <= 2");
  EXPECT_EQ(simp("i < I && t > 3", kIT), "4 <= t");
  expect_user_error([] { simplify_condition(P("t + 1", kT), kT); }, "not a condition");
}

// ---- properties ------------------------------------------------------------------------------

// The map of phi holds exactly the points that phi selects when evaluated directly.
TEST(IslBridgeProperty, EdgeMapHoldsExactlyThePointsPhiSelects) {
  std::mt19937 rng(1234);
  struct Case {
    Dims sink, source;
    int64_t max_bound;
  };
  std::vector<Case> cases = {{kT, kT, 6},
                             {kIT, kIT, 3},
                             {kBIT, parse_dims("b:B,i:I"), 2},
                             {parse_dims("i:I"), kIT, 4},
                             {kT, parse_dims("s:S"), 4}};
  int checked = 0;
  for (int iter = 0; iter < 600; ++iter) {
    const Case& c = cases[iter % cases.size()];
    Dims all = testing::union_dims(c.sink, c.source);
    Expr phi = testing::random_dependence(rng, c.sink, c.source);
    Expr cond;  // a condition over a sink variable, on some iterations
    for (const Dim& d : c.sink) {
      if (iter % 4 == 0 && d.name() == "t") cond = P("t % 2 == 0 || t + 2 >= T", all);
      if (iter % 4 == 1 && d.name() == "i") cond = P("i >= 1", all);
    }
    IslContext ctx;
    isl::map m = edge_to_isl(ctx, "sink", c.sink, "source", c.source, phi, cond);
    testing::for_each_bounds(all, c.max_bound, [&](const Env& bounds) {
      std::set<std::pair<Point, Point>> want;
      testing::for_each_point(c.sink, bounds, [&](const Env& env, const Point& p) {
        if (cond.defined() && !testing::ref_eval(cond, env)) return;
        for (const Point& q : testing::expand(phi, env, c.source)) want.emplace(p, q);
      });
      ASSERT_EQ(testing::map_points(m, bounds), want) << "phi = " << phi << ", cond = " << cond << ", map = " << m;
      ++checked;
    });
  }
  EXPECT_GT(checked, 1000);
}

// pw_aff_to_expr(expr_to_pw_aff(e)) is logically e wherever the conversion succeeds.
TEST(IslBridgeProperty, PwAffRoundTrip) {
  std::mt19937 rng(99);
  int ok = 0;
  for (int iter = 0; iter < 400; ++iter) {
    const Dims& d = iter % 2 ? kT : kIT;
    Expr e = testing::random_affine(rng, d, d, 2);
    IslContext ctx;
    Expr back;
    try {
      back = pw_aff_to_expr(expr_to_pw_aff(ctx, e, d), d);
    } catch (const UserError& err) {
      EXPECT_NE(std::string(err.what()).find("cannot be written with min and max"), std::string::npos) << err.what();
      continue;
    }
    ++ok;
    testing::for_each_bounds(d, 5, [&](const Env& bounds) {
      testing::for_each_point(d, bounds, [&](const Env& env, const Point&) {
        ASSERT_EQ(testing::ref_eval(back, env), testing::ref_eval(e, env)) << e << " came back as " << back;
      });
    });
  }
  EXPECT_GT(ok, 300);
}

// logically_equal never says true for expressions that differ on small bounds, and says true for
// expressions that agree (random pairs are mostly one expression and a rewriting of it).
TEST(IslBridgeProperty, LogicallyEqualAgreesWithEvaluation) {
  std::mt19937 rng(7);
  int equal = 0, different = 0;
  for (int iter = 0; iter < 400; ++iter) {
    Expr a = testing::random_affine(rng, kT, kT, 2);
    Expr b;
    switch (iter % 4) {
      case 0: b = a + Expr(0) * Expr::var("t"); break;
      case 1: b = min(a, a + Expr(1)); break;
      case 2: b = a + Expr(1); break;
      default: b = testing::random_affine(rng, kT, kT, 2); break;
    }
    bool same_values = true;
    testing::for_each_bounds(kT, 8, [&](const Env& bounds) {
      testing::for_each_point(kT, bounds, [&](const Env& env, const Point&) {
        same_values = same_values && testing::ref_eval(a, env) == testing::ref_eval(b, env);
      });
    });
    bool eq = logically_equal(a, b, kT);
    if (eq) {
      EXPECT_TRUE(same_values) << a << " vs " << b;
    }
    if (iter % 4 < 2) {
      EXPECT_TRUE(eq) << a << " vs " << b;
    }
    (eq ? equal : different)++;
  }
  EXPECT_GT(equal, 150);
  EXPECT_GT(different, 100);
}

// simplify_condition keeps the value of random conditions on every point of small domains.
TEST(IslBridgeProperty, SimplifyConditionKeepsValues) {
  std::mt19937 rng(42);
  for (int iter = 0; iter < 300; ++iter) {
    const Dims& d = iter % 2 ? kT : kIT;
    auto cmp = [&] {
      Expr x = testing::random_affine(rng, d, d, 1), y = testing::random_affine(rng, d, d, 0);
      switch (testing::rand_int(rng, 0, 3)) {
        case 0: return x == y;
        case 1: return x < y;
        case 2: return x <= y;
        default: return x != y;
      }
    };
    Expr c = testing::rand_int(rng, 0, 1) ? (cmp() && cmp()) : (cmp() || !cmp());
    Expr s = simplify_condition(c, d);
    testing::for_each_bounds(d, 5, [&](const Env& bounds) {
      testing::for_each_point(d, bounds, [&](const Env& env, const Point&) {
        ASSERT_EQ(testing::ref_eval(s, env) != 0, testing::ref_eval(c, env) != 0) << c << " became " << s;
      });
    });
  }
}

}  // namespace
}  // namespace tempo::sym
