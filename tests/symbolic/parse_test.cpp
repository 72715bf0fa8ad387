#include "symbolic/parse.h"

#include <gtest/gtest.h>

#include <limits>

#include "random_expr.h"
#include "util/error.h"

namespace tempo::sym {
namespace {

const Dims kDims = parse_dims("b:B,i:I,t:T");
const Expr b = kDims[0].var, B = kDims[0].bound, i = kDims[1].var, I = kDims[1].bound,
           t = kDims[2].var, T = kDims[2].bound;

Expr P(const std::string& s) { return parse(s, kDims); }

void expect_round_trip(const Expr& e) {
  Expr back = parse(e.str(), kDims);
  EXPECT_TRUE(back.same(e)) << e.str() << " parsed back as " << back.str();
}

std::string error_of(const std::string& text) {
  try {
    parse(text, kDims);
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Parse, Atoms) {
  EXPECT_TRUE(P("t").same(t));
  EXPECT_TRUE(P("T").same(T));
  EXPECT_TRUE(P("42").same(Expr(42)));
  EXPECT_TRUE(P("-42").same(Expr(-42)));
  EXPECT_TRUE(P("true").same(Expr::boolean(true)));
  EXPECT_TRUE(P("false").same(Expr::boolean(false)));
  EXPECT_TRUE(P("  ( t )  ").same(t));
  EXPECT_TRUE(P("-9223372036854775808").same(Expr(INT64_MIN)));
  EXPECT_TRUE(P("9223372036854775807").same(Expr(INT64_MAX)));
}

TEST(Parse, Arithmetic) {
  EXPECT_TRUE(P("t + 1").same(t + 1));
  EXPECT_TRUE(P("t - 1").same(t - 1));
  EXPECT_TRUE(P("T - t - 1").same(T - t - 1));
  EXPECT_TRUE(P("-t").same(-t));
  EXPECT_TRUE(P("-t*b").same(-t * b));
  EXPECT_TRUE(P("2*t + 3*b").same(2 * t + 3 * b));
  EXPECT_TRUE(P("t // 2").same(floordiv(t, 2)));
  EXPECT_TRUE(P("t / 2").same(floordiv(t, 2)));
  EXPECT_TRUE(P("(t + 1) % 5").same((t + 1) % 5));
  EXPECT_TRUE(P("t - (b + i)").same(t - (b + i)));
  EXPECT_TRUE(P("min(t + 5, T)").same(min(t + 5, T)));
  EXPECT_TRUE(P("max(0, t - 3, b)").same(max({Expr(0), t - 3, b})));
  EXPECT_TRUE(P("1 + 2*3").same(Expr(7)));
}

TEST(Parse, BooleansAndComparisons) {
  EXPECT_TRUE(P("t < T").same(t < T));
  EXPECT_TRUE(P("t > 3").same(Expr(3) < t));
  EXPECT_TRUE(P("t >= 3").same(Expr(3) <= t));
  EXPECT_TRUE(P("(i + 1) % 5 == 0").same((i + 1) % 5 == 0));
  EXPECT_TRUE(P("t != b && t < T || !(b == 0)").same(((t != b) && (t < T)) || !(b == 0)));
  EXPECT_TRUE(P("t < 1 && (b < 1 || i < 1)").same((t < 1) && ((b < 1) || (i < 1))));
}

TEST(Parse, SlicesAndSequences) {
  EXPECT_TRUE(P("max(0, t - 3):t + 1").same(slice(max(0, t - 3), t + 1)));
  EXPECT_TRUE(P("0:T:2").same(slice(0, T, 2)));
  EXPECT_TRUE(P("[b, max(0, i - 1), t:min(t + 3, T)]")
                  .same(seq({b, max(0, i - 1), slice(t, min(t + 3, T))})));
  EXPECT_TRUE(P("[]").same(seq({})));
  EXPECT_TRUE(P("[t]").same(seq({t})));
}

TEST(Parse, PrinterCornerCasesRoundTrip) {
  for (const Expr& e : std::vector<Expr>{
           -t, -(t * b), -(t + b), t - (b + i), t - 2 * (b + i), -floordiv(t, 2), floordiv(-t, 2),
           floordiv(t, -3), t % -3, floordiv(t, b * i), floordiv(floordiv(t, 2), 3),
           floordiv(t, floordiv(b, 2)), 2 * floordiv(t, 3), floordiv(t, 3) * b, -t + b,
           b - t * i, t + floordiv(-t, 2), !(t < b) && (i == 0), (t < b) || ((i < 0) && (b < 1)),
           !((t < b) || (i < 1)), slice(-1, t + 1), slice(0, T, b + 1), Expr(INT64_MIN),
           Expr(INT64_MAX), t - Expr(int64_t{9223372036854775807}), -3 * t * b, min(-t, -3), T - 1 - t})
    expect_round_trip(e);
}

TEST(Parse, RandomRoundTrip) {
  std::mt19937 rng(1234);
  for (int n = 0; n < 4000; ++n) {
    expect_round_trip(testing::random_int_expr(rng, kDims, 5));
    expect_round_trip(testing::random_bool_expr(rng, kDims, 4));
    expect_round_trip(testing::random_slice(rng, kDims, 3));
    expect_round_trip(testing::random_seq(rng, kDims, 3));
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(Parse, UnknownSymbol) {
  EXPECT_EQ(error_of("t + X").rfind("unknown symbol 'X' at column 5 in \"t + X\"", 0), 0u)
      << error_of("t + X");
  EXPECT_NE(error_of("min(t, Q)").find("unknown symbol 'Q' at column 8"), std::string::npos);
  EXPECT_THROW(parse("t", Dims{}), UserError);
}

TEST(Parse, SyntaxErrors) {
  EXPECT_NE(error_of("t +").find("end of input at column 4"), std::string::npos) << error_of("t +");
  EXPECT_NE(error_of("t + )").find("unexpected ')' at column 5"), std::string::npos)
      << error_of("t + )");
  EXPECT_NE(error_of("(t + 1").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("t $ 1").find("unexpected character '$' at column 3"), std::string::npos);
  EXPECT_NE(error_of("t = 1").find("'=='"), std::string::npos);
  EXPECT_NE(error_of("t < b < i").find("do not chain"), std::string::npos);
  EXPECT_NE(error_of("t t").find("unexpected 't' at column 3"), std::string::npos);
  EXPECT_NE(error_of("[t, b").find("expected ']'"), std::string::npos);
  EXPECT_NE(error_of("99999999999999999999").find("too large"), std::string::npos);
  EXPECT_NE(error_of("9223372036854775808").find("too large"), std::string::npos);
  EXPECT_NE(error_of("min()").find("unexpected ')'"), std::string::npos);
}

TEST(Parse, TypeErrorsNameTheColumn) {
  EXPECT_NE(error_of("t + (b < 1)").find("at column 3"), std::string::npos) << error_of("t + (b < 1)");
  EXPECT_NE(error_of("t // 0").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("t % 0").find("modulo by zero"), std::string::npos);
  EXPECT_NE(error_of("!t").find("must be boolean"), std::string::npos) << error_of("!t");
  EXPECT_NE(error_of("0:T:0").find("step must be positive"), std::string::npos);
  EXPECT_NE(error_of("[t < 1]").find("must be an integer or a slice"), std::string::npos);
}

// Inputs the symbolic_parse fuzz target found: constants fold as the evaluator computes them,
// wrapping around on overflow (INT64_MIN // -1 trapped the processor), and deep nesting is an
// error rather than a stack overflow.
TEST(Parse, ConstantFoldingWrapsAround) {
  const int64_t lowest = std::numeric_limits<int64_t>::min();
  EXPECT_TRUE(P("-(-9223372036854775807 - 1)").same(Expr(lowest)));
  EXPECT_TRUE(P("(-9223372036854775807 - 1) // -1").same(Expr(lowest)));
  EXPECT_TRUE(P("(-9223372036854775807 - 1) % -1").same(Expr(0)));
  // 463 // INT64_MIN is -1, and -1 * INT64_MIN overflowed on the way to the remainder.
  EXPECT_TRUE(P("463 % (-9223372036854775807 - 1)").same(Expr(lowest + 463)));
  EXPECT_TRUE(P("-463 % (-9223372036854775807 - 1)").same(Expr(-463)));
  EXPECT_TRUE(P("-463 % 9223372036854775807").same(Expr(9223372036854775807 - 463)));
  EXPECT_TRUE(P("9223372036854775807 + 1").same(Expr(lowest)));
  EXPECT_TRUE(P("4611686018427387904 * 2 * (-1)").same(Expr(lowest)));
  expect_round_trip(P("-(-9223372036854775807 - 1) * 2 % (i + 1)"));
}

TEST(Parse, DeepNestingIsAnError) {
  const std::string parens = std::string(100000, '(') + "t" + std::string(100000, ')');
  EXPECT_NE(error_of(parens).find("expression nested more than 256 levels deep"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(100000, '-') + "t").find("nested more than 256 levels"),
            std::string::npos);
  EXPECT_TRUE(P(std::string(200, '(') + "t" + std::string(200, ')')).same(t));
  // Chains that do not flatten into one sum or product build a tree as deep as they are long;
  // the constructors refuse it at kMaxExprDepth (these crashed `tempo expr simplify`).
  std::string floors = "t", remainders = "t";
  for (int k = 0; k < 15000; ++k) floors += " // 2 * t", remainders += " % 2 % 3";
  EXPECT_NE(error_of(floors).find("nested more than 1000 levels"), std::string::npos);
  EXPECT_NE(error_of(remainders).find("nested more than 1000 levels"), std::string::npos);
}

}  // namespace
}  // namespace tempo::sym
