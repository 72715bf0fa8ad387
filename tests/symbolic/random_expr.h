// Random symbolic expressions for property tests, and a plain recursive reference evaluator.
// Header-only; every test file of tests/symbolic may include it.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "symbolic/expr.h"
#include "util/error.h"

namespace tempo::sym::testing {

inline int64_t rand_int(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// A constant, a variable or a bound of one of dims.
inline Expr random_leaf(std::mt19937& rng, const Dims& dims) {
  int64_t k = rand_int(rng, 0, 5);
  if (dims.empty() || k <= 1) return Expr(rand_int(rng, -6, 6));
  const Dim& d = dims[rand_int(rng, 0, static_cast<int64_t>(dims.size()) - 1)];
  return k <= 3 ? d.var : d.bound;
}

inline Expr random_nonzero_const(std::mt19937& rng) {
  int64_t v = rand_int(rng, 1, 5);
  return Expr(rand_int(rng, 0, 3) == 0 ? -v : v);
}

// An integer expression of nesting depth at most `depth` over +, -, unary -, * (by constants and
// by symbols), floordiv and mod by nonzero constants, min and max (2 or 3 operands).
inline Expr random_int_expr(std::mt19937& rng, const Dims& dims, int depth) {
  if (depth <= 0 || rand_int(rng, 0, 6) == 0) return random_leaf(rng, dims);
  auto sub = [&] { return random_int_expr(rng, dims, depth - 1); };
  switch (rand_int(rng, 0, 10)) {
    case 0:
    case 1: return sub() + sub();
    case 2: return sub() - sub();
    case 3: return -sub();
    case 4: return random_nonzero_const(rng) * sub();
    case 5: return sub() * random_leaf(rng, dims);
    case 6: return floordiv(sub(), random_nonzero_const(rng));
    case 7: return sub() % random_nonzero_const(rng);
    case 8: return rand_int(rng, 0, 2) ? min(sub(), sub()) : min({sub(), sub(), sub()});
    case 9: return rand_int(rng, 0, 2) ? max(sub(), sub()) : max({sub(), sub(), sub()});
    default: return sub() + Expr(rand_int(rng, -4, 4));
  }
}

// A boolean expression: comparisons of random integer expressions combined with && || !.
inline Expr random_bool_expr(std::mt19937& rng, const Dims& dims, int depth) {
  auto cmp = [&] {
    Expr a = random_int_expr(rng, dims, std::max(depth - 1, 0));
    Expr b = random_int_expr(rng, dims, std::max(depth - 1, 0));
    switch (rand_int(rng, 0, 5)) {
      case 0: return a == b;
      case 1: return a != b;
      case 2: return a < b;
      case 3: return a <= b;
      case 4: return a > b;
      default: return a >= b;
    }
  };
  if (depth <= 1) {
    if (rand_int(rng, 0, 15) == 0) return Expr::boolean(rand_int(rng, 0, 1));
    return cmp();
  }
  auto sub = [&] { return random_bool_expr(rng, dims, depth - 1); };
  switch (rand_int(rng, 0, 4)) {
    case 0: return sub() && sub();
    case 1: return sub() || sub();
    case 2: return !sub();
    default: return cmp();
  }
}

// A slice start:stop:step with random integer bounds and a positive constant step (often 1).
inline Expr random_slice(std::mt19937& rng, const Dims& dims, int depth) {
  Expr step = rand_int(rng, 0, 2) ? Expr(1) : Expr(rand_int(rng, 1, 4));
  return slice(random_int_expr(rng, dims, depth), random_int_expr(rng, dims, depth), step);
}

// A sequence of 1 to 3 entries, each a point or a slice.
inline Expr random_seq(std::mt19937& rng, const Dims& dims, int depth) {
  std::vector<Expr> entries;
  int64_t n = rand_int(rng, 1, 3);
  for (int64_t i = 0; i < n; ++i)
    entries.push_back(rand_int(rng, 0, 1) ? random_slice(rng, dims, depth)
                                          : random_int_expr(rng, dims, depth));
  return seq(std::move(entries));
}

// Values of every variable and bound of dims: bound in [1, max_bound], 0 <= var < bound.
using Env = std::unordered_map<std::string, int64_t>;
inline Env random_env(std::mt19937& rng, const Dims& dims, int64_t max_bound = 12) {
  Env env;
  for (const Dim& d : dims) {
    int64_t b = rand_int(rng, 1, max_bound);
    env[d.bound.name()] = b;
    env[d.var.name()] = rand_int(rng, 0, b - 1);
  }
  return env;
}

// Reference semantics, written as plainly as possible: floor division and modulo, booleans as
// 0/1, wrap-around arithmetic. Throws UserError on division by zero.
inline int64_t ref_eval(const Expr& e, const Env& env) {
  auto wrap = [](uint64_t v) { return static_cast<int64_t>(v); };
  auto fdiv = [](int64_t a, int64_t b) {
    if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
    int64_t q = a / b;
    if (q * b != a && ((a < 0) != (b < 0))) q -= 1;
    return q;
  };
  switch (e.op()) {
    case Op::Const:
    case Op::Bool: return e.value();
    case Op::Symbol: {
      auto it = env.find(e.name());
      if (it == env.end()) throw UserError("unbound symbol " + e.name());
      return it->second;
    }
    case Op::Add: {
      uint64_t s = 0;
      for (const Expr& a : e.args()) s += static_cast<uint64_t>(ref_eval(a, env));
      return wrap(s);
    }
    case Op::Mul: {
      uint64_t p = 1;
      for (const Expr& a : e.args()) p *= static_cast<uint64_t>(ref_eval(a, env));
      return wrap(p);
    }
    case Op::FloorDiv:
    case Op::Mod: {
      int64_t a = ref_eval(e.arg(0), env), b = ref_eval(e.arg(1), env);
      if (b == 0) throw UserError("division by zero in " + e.str());
      int64_t q = fdiv(a, b);
      return e.op() == Op::FloorDiv ? q : wrap(static_cast<uint64_t>(a) - static_cast<uint64_t>(q) * static_cast<uint64_t>(b));
    }
    case Op::Min:
    case Op::Max: {
      int64_t r = ref_eval(e.arg(0), env);
      for (size_t i = 1; i < e.size(); ++i) {
        int64_t v = ref_eval(e.arg(i), env);
        r = e.op() == Op::Min ? std::min(r, v) : std::max(r, v);
      }
      return r;
    }
    case Op::Eq: return ref_eval(e.arg(0), env) == ref_eval(e.arg(1), env);
    case Op::Ne: return ref_eval(e.arg(0), env) != ref_eval(e.arg(1), env);
    case Op::Lt: return ref_eval(e.arg(0), env) < ref_eval(e.arg(1), env);
    case Op::Le: return ref_eval(e.arg(0), env) <= ref_eval(e.arg(1), env);
    case Op::And: {
      bool r = true;
      for (const Expr& a : e.args()) r = ref_eval(a, env) != 0 && r;  // evaluates every operand
      return r;
    }
    case Op::Or: {
      bool r = false;
      for (const Expr& a : e.args()) r = ref_eval(a, env) != 0 || r;
      return r;
    }
    case Op::Not: return !ref_eval(e.arg(0), env);
    case Op::Slice:
    case Op::Seq: break;
  }
  throw UserError("ref_eval: not a scalar: " + e.str());
}

// A slice or sequence evaluated entry-wise to (start, stop, step, is_point) tuples.
struct RefRange {
  int64_t start, stop, step;
  bool point;
  bool operator==(const RefRange&) const = default;
};
inline std::vector<RefRange> ref_eval_seq(const Expr& e, const Env& env) {
  std::vector<RefRange> out;
  auto one = [&](const Expr& x) {
    if (x.is_slice())
      out.push_back({ref_eval(x.arg(0), env), ref_eval(x.arg(1), env), ref_eval(x.arg(2), env), false});
    else
      out.push_back({ref_eval(x, env), ref_eval(x, env) + 1, 1, true});
  };
  if (e.is_seq())
    for (const Expr& x : e.args()) one(x);
  else
    one(e);
  return out;
}

}  // namespace tempo::sym::testing
