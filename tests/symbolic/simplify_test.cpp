#include "symbolic/simplify.h"

#include <gtest/gtest.h>

#include "random_expr.h"
#include "symbolic/parse.h"
#include "util/error.h"

namespace tempo::sym {
namespace {

const Dims kDims = parse_dims("b:B,i:I,t:T");
const Expr b = kDims[0].var, B = kDims[0].bound, i = kDims[1].var, I = kDims[1].bound,
           t = kDims[2].var, T = kDims[2].bound;

// simplify(text) printed.
std::string S(const std::string& text) { return simplify(parse(text, kDims), kDims).str(); }

TEST(Simplify, ConstantsAndLinearForm) {
  EXPECT_EQ(S("(2 + 3) * 4"), "20");
  EXPECT_EQ(S("t - t"), "0");
  EXPECT_EQ(S("2*t - t"), "t");
  EXPECT_EQ(S("(t + 1) - (t - 1)"), "2");
  EXPECT_EQ(S("2*(t + 1) - 2*t"), "2");
  EXPECT_EQ(S("3*(t - b) + 2*b + 1 - t"), "2*t - b + 1");
  EXPECT_EQ(S("-(t - T) - 1"), "T - t - 1");
  EXPECT_EQ(S("b + t + i"), "b + i + t");  // canonical operand order
  EXPECT_EQ(S("t + b + i"), "b + i + t");
  EXPECT_EQ(S("t*b - b*t"), "0");           // products commute
  EXPECT_EQ(S("2*t*b + b*t"), "3*b*t");
  EXPECT_EQ(S("t*0 + 5"), "5");
}

TEST(Simplify, MinMax) {
  EXPECT_EQ(S("max(0, t)"), "t");
  EXPECT_EQ(S("min(t, T - 1)"), "t");
  EXPECT_EQ(S("min(t, T)"), "t");
  EXPECT_EQ(S("min(t + 1, T)"), "t + 1");
  EXPECT_EQ(S("max(0, t - 3)"), "max(t - 3, 0)");
  // Operands of min/max in Expr::compare order (symbols before sums).
  EXPECT_EQ(S("min(t + 5, T) - t"), "min(T, t + 5) - t");
  EXPECT_EQ(S("min(t, t)"), "t");
  EXPECT_EQ(S("max(t, t + 1, b)"), "max(b, t + 1)");
  EXPECT_EQ(S("min(b, t, b)"), "min(b, t)");
  EXPECT_EQ(S("min(t, min(b, 0))"), "0");  // 0 <= t, 0 <= b
  EXPECT_EQ(S("max(t - T, -1)"), "-1");    // t - T <= -1
  EXPECT_EQ(S("min(max(t - 3, 0), t)"), "max(t - 3, 0)");
  EXPECT_EQ(S("max(min(t + 5, T), t)"), "min(T, t + 5)");
  EXPECT_EQ(S("min(t + 5, T) - min(t + 5, T)"), "0");
}

TEST(Simplify, Comparisons) {
  EXPECT_EQ(S("t < T"), "true");
  EXPECT_EQ(S("t >= 0"), "true");
  EXPECT_EQ(S("t + 1 <= T"), "true");
  EXPECT_EQ(S("t < 0"), "false");
  EXPECT_EQ(S("t >= T"), "false");
  EXPECT_EQ(S("T == t"), "false");
  EXPECT_EQ(S("t != T"), "true");
  EXPECT_EQ(S("t - t == 0"), "true");
  EXPECT_EQ(S("min(t + 5, T) > t"), "true");
  EXPECT_EQ(S("max(0, t - 3) <= t"), "true");
  EXPECT_EQ(S("t + 1 < b + 3"), "t < b + 2");
  EXPECT_EQ(S("t > 3"), "3 < t");
  EXPECT_EQ(S("b == t"), S("t == b"));  // == is oriented canonically
  EXPECT_EQ(S("(t + 1) % 5 == 0"), "(t + 1) % 5 == 0");
  EXPECT_EQ(S("2*b == 1"), "false");            // parity
  EXPECT_EQ(S("2*b != 2*t + 1"), "true");
  EXPECT_EQ(S("2*b == 2*t + 4"), "t + 2 == b");  // divided by the gcd
  EXPECT_EQ(S("2*b < 2*t + 3"), "b <= t + 1");   // 2*(t - b) + 3 > 0 <=> t - b + 1 >= 0
  EXPECT_EQ(S("3*b <= 3*t - 2"), "b + 1 <= t");
}

TEST(Simplify, Booleans) {
  EXPECT_EQ(S("t < b && true"), "t < b");
  EXPECT_EQ(S("t < b || false"), "t < b");
  EXPECT_EQ(S("t < b && t < T"), "t < b");
  EXPECT_EQ(S("t < b || t < T"), "true");
  EXPECT_EQ(S("!(t < b)"), "b <= t");
  EXPECT_EQ(S("!(t <= b)"), "b < t");
  EXPECT_EQ(S("!(t == b)"), S("t != b"));
  EXPECT_EQ(S("!(t < b && i == 0)"), S("b <= t || i != 0"));
  EXPECT_EQ(S("t < b && !(t < b)"), "false");
  EXPECT_EQ(S("t < b || b <= t"), "true");
  EXPECT_EQ(S("t < b && t < b"), "t < b");
  EXPECT_EQ(S("i == 0 && t < b"), S("t < b && i == 0"));  // && commutes
}

TEST(Simplify, DivisionAndModulo) {
  EXPECT_EQ(S("(2*t) % 2"), "0");
  EXPECT_EQ(S("(4*t + 2) // 2"), "2*t + 1");
  EXPECT_EQ(S("(2*t + 1) // 2"), "t");
  EXPECT_EQ(S("(2*t + 3) // 2"), "t + 1");
  EXPECT_EQ(S("(6*t + b) // 3"), "2*t + b // 3");
  EXPECT_EQ(S("(6*t + b + 7) % 3"), "(b + 1) % 3");
  EXPECT_EQ(S("(2*t + 2) // 4"), "(t + 1) // 2");
  EXPECT_EQ(S("t % T"), "t");
  EXPECT_EQ(S("t // T"), "0");
  EXPECT_EQ(S("(t // 2) // 3"), "t // 6");
  EXPECT_EQ(S("(t % 6) % 3"), "t % 3");
  EXPECT_EQ(S("(t % 3) % 6"), "t % 3");
  EXPECT_EQ(S("t % 1"), "0");
  EXPECT_EQ(S("t // -1"), "-t");
  EXPECT_EQ(S("(t % 4) // 4"), "0");
  EXPECT_EQ(S("t % 4 < 4"), "true");
}

TEST(Simplify, SlicesAndSequences) {
  EXPECT_EQ(S("max(0, t):min(t + 1, T)"), "t:t + 1");
  EXPECT_EQ(S("[b + 0, max(0, i - 1), t:min(t + 3, T):1 + 1]"), "[b, max(i - 1, 0), t:min(T, t + 3):2]");
}

TEST(Simplify, Ranges) {
  Range r = range_of(t + 5, kDims);
  EXPECT_EQ(r.lo.str(), "5");
  EXPECT_EQ(r.hi.str(), "T + 4");
  r = range_of(t % 3, kDims);
  EXPECT_EQ(r.lo.str(), "0");
  EXPECT_EQ(r.hi.str(), "2");
  r = range_of(T - 1 - t, kDims);
  EXPECT_EQ(r.lo.str(), "0");
  EXPECT_EQ(r.hi.str(), "T - 1");
  r = range_of(min(t + 5, T), kDims);
  EXPECT_EQ(r.lo.str(), "1");
  EXPECT_EQ(r.hi.str(), "T");
  r = range_of(t - b, kDims);
  EXPECT_EQ(r.lo.str(), "-B + 1");
  EXPECT_EQ(r.hi.str(), "T - 1");
  r = range_of(t * b - 1, kDims);
  EXPECT_EQ(r.lo.str(), "-1");
  EXPECT_FALSE(r.hi.defined());
  r = range_of(Expr::var("x"), kDims);
  EXPECT_FALSE(r.lo.defined());
  EXPECT_THROW(range_of(t < T, kDims), UserError);
}

TEST(Simplify, Proofs) {
  EXPECT_TRUE(prove_nonneg(T - 1 - t, kDims));
  EXPECT_TRUE(prove_positive(T - t, kDims));
  EXPECT_FALSE(prove_positive(T - 1 - t, kDims));
  EXPECT_FALSE(prove_nonneg(t - 1, kDims));
  EXPECT_TRUE(prove_positive(min(t + 5, T) - t, kDims));
  EXPECT_TRUE(prove_nonneg(t + 1 - max(0, t - 3), kDims));
  EXPECT_FALSE(prove_nonneg(t - b, kDims));
  EXPECT_TRUE(prove_nonneg(T - B + B - 1, kDims));
  EXPECT_TRUE(prove_positive(B * T, kDims));
  EXPECT_TRUE(prove_nonneg(t * b, kDims));
  EXPECT_TRUE(prove_nonneg(floordiv(t, 2), kDims));
  EXPECT_TRUE(prove_nonneg(T - 1 - floordiv(t, 2), kDims));
}

int64_t eval(const Expr& e, const testing::Env& env) { return testing::ref_eval(e, env); }

// Property: simplify preserves the value at random points (0 <= var < bound) and is idempotent.
void check_preserves(const Expr& e, std::mt19937& rng) {
  Expr s = simplify(e, kDims);
  Expr again = simplify(s, kDims);
  ASSERT_TRUE(again.same(s)) << "not idempotent: " << e.str() << "\n  -> " << s.str() << "\n  -> "
                             << again.str();
  ASSERT_TRUE(parse(s.str(), kDims).same(s)) << s.str();
  for (int k = 0; k < 12; ++k) {
    testing::Env env = testing::random_env(rng, kDims, k < 6 ? 4 : 40);
    if (e.is_slice() || e.is_seq()) {
      ASSERT_EQ(testing::ref_eval_seq(s, env), testing::ref_eval_seq(e, env))
          << e.str() << " -> " << s.str();
    } else {
      ASSERT_EQ(eval(s, env), eval(e, env)) << e.str() << " -> " << s.str();
    }
  }
}

TEST(Simplify, RandomIntExpressions) {
  std::mt19937 rng(2024);
  for (int n = 0; n < 3000; ++n) {
    check_preserves(testing::random_int_expr(rng, kDims, 5), rng);
    if (HasFatalFailure()) return;
  }
}

TEST(Simplify, RandomBoolExpressions) {
  std::mt19937 rng(77);
  for (int n = 0; n < 2000; ++n) {
    check_preserves(testing::random_bool_expr(rng, kDims, 4), rng);
    if (HasFatalFailure()) return;
  }
}

TEST(Simplify, RandomSlicesAndSequences) {
  std::mt19937 rng(5);
  for (int n = 0; n < 1000; ++n) {
    check_preserves(testing::random_seq(rng, kDims, 3), rng);
    if (HasFatalFailure()) return;
  }
}

// Expressions shaped like dependence expressions (offsets, windows, clamps) are where decisions
// from ranges matter: every decided comparison is checked at many points.
TEST(Simplify, RandomWindowComparisons) {
  std::mt19937 rng(11);
  auto affine = [&] {
    return testing::rand_int(rng, -2, 2) * t + testing::rand_int(rng, -1, 1) * T +
           testing::rand_int(rng, -5, 5);
  };
  for (int n = 0; n < 3000; ++n) {
    Expr a = testing::rand_int(rng, 0, 1) ? min(affine(), affine()) : max(affine(), affine());
    Expr e = testing::rand_int(rng, 0, 1) ? (a < affine()) : (affine() <= a);
    check_preserves(e, rng);
    check_preserves(a - affine(), rng);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace tempo::sym
