#include "symbolic/eval.h"

#include <gtest/gtest.h>

#include "random_expr.h"
#include "symbolic/parse.h"
#include "util/error.h"

namespace tempo::sym {
namespace {

const Dims kDims = parse_dims("b:B,i:I,t:T");
const SymbolLayout kLayout(kDims);
const Expr b = kDims[0].var, B = kDims[0].bound, i = kDims[1].var, I = kDims[1].bound,
           t = kDims[2].var, T = kDims[2].bound;

// Values in layout order: b, i, t, B, I, T.
std::vector<int64_t> values(int64_t vb, int64_t vi, int64_t vt, int64_t VB, int64_t VI, int64_t VT) {
  return {vb, vi, vt, VB, VI, VT};
}

std::vector<int64_t> to_slots(const testing::Env& env) {
  std::vector<int64_t> v(kLayout.num_slots());
  for (size_t k = 0; k < kDims.size(); ++k) {
    v[k] = env.at(kDims[k].var.name());
    v[kDims.size() + k] = env.at(kDims[k].bound.name());
  }
  return v;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Eval, Slots) {
  EXPECT_EQ(kLayout.num_slots(), 6u);
  EXPECT_EQ(kLayout.slot(b), 0);
  EXPECT_EQ(kLayout.slot(t), 2);
  EXPECT_EQ(kLayout.slot(B), 3);
  EXPECT_EQ(kLayout.slot(T), 5);
  EXPECT_EQ(kLayout.slot(Expr::var("x")), -1);
  EXPECT_EQ(kLayout.slot(Expr::var("T")), -1);  // a variable named like a bound is not the bound
  EXPECT_EQ(kLayout.slot(t + 1), -1);
}

TEST(Eval, Unit) {
  auto env = values(1, 2, 7, 4, 5, 10);
  auto ev = [&](const Expr& e) { return CompiledExpr(e, kLayout).eval(env.data()); };
  EXPECT_EQ(ev(Expr(5)), 5);
  EXPECT_EQ(ev(t), 7);
  EXPECT_EQ(ev(T), 10);
  EXPECT_EQ(ev(t + 3), 10);
  EXPECT_EQ(ev(t - 9), -2);
  EXPECT_EQ(ev(max(0, t - 9)), 0);
  EXPECT_EQ(ev(min(t + 5, T)), 10);
  EXPECT_EQ(ev(min(t + 5, T) - t), 3);
  EXPECT_EQ(ev(3 * t - 2 * b + i), 21);
  EXPECT_EQ(ev(-t), -7);
  EXPECT_EQ(ev(floordiv(t - 10, 4)), -1);
  EXPECT_EQ(ev((t - 10) % 4), 1);
  EXPECT_EQ(ev(t % -4), -1);
  EXPECT_EQ(ev(floordiv(t, -4)), -2);
  EXPECT_EQ(ev(floordiv(-t, b + 1)), -4);
  EXPECT_EQ(ev((-t) % (b + 1)), 1);
  EXPECT_EQ(ev(floordiv(T, t - 2 * b - 2 * i)), 10);
  EXPECT_EQ(ev(t < T), 1);
  EXPECT_EQ(ev(T <= t), 0);
  EXPECT_EQ(ev(Expr(3) < t), 1);
  EXPECT_EQ(ev(t + 3 == T), 1);
  EXPECT_EQ(ev(!(t + 3 == T)), 0);
  EXPECT_EQ(ev((t < T) && (b == 1) && (i != 2)), 0);
  EXPECT_EQ(ev((t < 0) || (b == 1)), 1);
  EXPECT_EQ(ev(Expr::boolean(true)), 1);
  EXPECT_TRUE(CompiledExpr(Expr(3), kLayout).is_constant());
  EXPECT_FALSE(CompiledExpr(t, kLayout).is_constant());
}

TEST(Eval, Sequences) {
  auto env = values(1, 0, 2, 4, 5, 10);
  IndexRange r[3];
  CompiledSeq one(slice(max(0, t - 3), t + 1), kLayout);
  ASSERT_EQ(one.size(), 1u);
  one.eval(env.data(), r);
  EXPECT_FALSE(r[0].point);
  EXPECT_EQ(r[0].start, 0);
  EXPECT_EQ(r[0].stop, 3);
  EXPECT_EQ(r[0].step, 1);
  EXPECT_EQ(r[0].length(), 3);

  CompiledSeq point(t + 1, kLayout);
  ASSERT_EQ(point.size(), 1u);
  point.eval(env.data(), r);
  EXPECT_TRUE(r[0].point);
  EXPECT_EQ(r[0].start, 3);
  EXPECT_EQ(r[0].length(), 1);

  CompiledSeq three(parse("[b, max(0, i - 1), t:min(t + 3, T):2]", kDims), kLayout);
  ASSERT_EQ(three.size(), 3u);
  three.eval(env.data(), r);
  EXPECT_TRUE(r[0].point);
  EXPECT_EQ(r[0].start, 1);
  EXPECT_TRUE(r[1].point);
  EXPECT_EQ(r[1].start, 0);
  EXPECT_FALSE(r[2].point);
  EXPECT_EQ(r[2].start, 2);
  EXPECT_EQ(r[2].stop, 5);
  EXPECT_EQ(r[2].step, 2);
  EXPECT_EQ(r[2].length(), 2);
  IndexRange empty{5, 3, 1, false};
  EXPECT_EQ(empty.length(), 0);
}

TEST(Eval, UnboundSymbol) {
  SymbolLayout only_t(parse_dims("t:T"));
  Dims other = parse_dims("x:X");
  std::string msg = error_of([&] { CompiledExpr(min(t + 5, Expr::bound("Q")), only_t); });
  EXPECT_EQ(msg.rfind("unbound symbol Q in \"min(t + 5, Q)\"", 0), 0u) << msg;
  msg = error_of([&] { CompiledSeq(seq({t, other[0].var}), only_t); });
  EXPECT_NE(msg.find("unbound symbol x"), std::string::npos) << msg;
}

TEST(Eval, DivisionByZero) {
  auto env = values(0, 2, 7, 4, 5, 10);
  CompiledExpr d(floordiv(t, b), kLayout);
  std::string msg = error_of([&] { d.eval(env.data()); });
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
  EXPECT_NE(msg.find("t // b"), std::string::npos) << msg;
  CompiledExpr m(t + (T % (i - 2)), kLayout);
  msg = error_of([&] { m.eval(env.data()); });
  EXPECT_NE(msg.find("modulo by zero"), std::string::npos) << msg;
  EXPECT_NE(msg.find("T % (i - 2)"), std::string::npos) << msg;
  env[0] = 3;
  EXPECT_EQ(d.eval(env.data()), 2);
}

TEST(Eval, NotAScalar) {
  EXPECT_THROW(CompiledExpr(slice(0, t), kLayout), UserError);
  EXPECT_THROW(CompiledSeq(t < T, kLayout), UserError);
}

TEST(Eval, NonConstantStepMustBePositive) {
  auto env = values(0, 2, 7, 4, 5, 10);
  CompiledSeq s(slice(0, T, b), kLayout);
  IndexRange r;
  EXPECT_THROW(s.eval(env.data(), &r), UserError);
  env[0] = 2;
  s.eval(env.data(), &r);
  EXPECT_EQ(r.length(), 5);
}

TEST(Eval, RandomAgainstReference) {
  std::mt19937 rng(99);
  int checked = 0;
  for (int n = 0; n < 3000; ++n) {
    Expr e = n % 3 == 2 ? testing::random_bool_expr(rng, kDims, 4)
                        : testing::random_int_expr(rng, kDims, 6);
    CompiledExpr c(e, kLayout);
    for (int k = 0; k < 8; ++k) {
      testing::Env env = testing::random_env(rng, kDims, k < 4 ? 12 : 1000);
      // Occasionally negative values too: the compiled code must not rely on the ranges.
      if (k == 7)
        for (auto& [name, v] : env) v -= 500;
      std::vector<int64_t> slots = to_slots(env);
      ASSERT_EQ(c.eval(slots.data()), testing::ref_eval(e, env)) << e.str();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24000);
}

TEST(Eval, RandomSequencesAgainstReference) {
  std::mt19937 rng(7);
  for (int n = 0; n < 2000; ++n) {
    Expr e = testing::random_seq(rng, kDims, 4);
    CompiledSeq c(e, kLayout);
    std::vector<IndexRange> out(c.size());
    for (int k = 0; k < 4; ++k) {
      testing::Env env = testing::random_env(rng, kDims);
      std::vector<int64_t> slots = to_slots(env);
      c.eval(slots.data(), out.data());
      auto want = testing::ref_eval_seq(e, env);
      ASSERT_EQ(want.size(), out.size());
      for (size_t j = 0; j < out.size(); ++j) {
        testing::RefRange got{out[j].start, out[j].stop, out[j].step, out[j].point};
        ASSERT_EQ(got, want[j]) << e.str() << " entry " << j;
      }
    }
  }
}

}  // namespace
}  // namespace tempo::sym
