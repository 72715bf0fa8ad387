// Canonical, range-aware simplification (see simplify.h).
//
// Integer expressions are brought to a linear normal form: a sum of coefficient*atom terms plus
// one constant, where an atom is anything that is not a sum, a constant or a scaled product (a
// symbol, a min/max, a floor division, a modulo, a product of non-constants). The atoms themselves
// are simplified first, so the normal form is a fixed point. Facts about ranges come from one
// prover, `Prover::nonneg`, which decides "f >= 0 everywhere" for a linear form f:
//   - a min/max atom m = min(a_i) or max(a_i) in f is eliminated by monotonicity: f is monotone
//     in m, so f >= 0 follows from f[m := a_i] >= 0 for all i, or for one i, depending on the
//     direction (see `nonneg`);
//   - then every remaining atom is replaced by its lower or upper bound (a linear form over the
//     bound symbols, e.g. t in [0, T - 1]), and the result is checked for every bound >= 1.
// Variables of one dimension are independent of each other and of other dimensions; bounds are
// parameters, so T - 1 - t >= 0 is proved by substituting t <= T - 1.
#include "symbolic/simplify.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "util/error.h"

namespace tempo::sym {
namespace {

// ---- arithmetic that wraps instead of overflowing (the evaluator wraps as well) --------------
int64_t wadd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wmul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t fdiv(int64_t a, int64_t b) {
  if (b == -1) return wmul(a, -1);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
// The remainder takes the divisor's sign; r + b cannot overflow (their signs differ).
int64_t fmod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// The checks below compare magnitudes; keep constants where they cannot overflow.
bool small(int64_t v) { return v > -(int64_t{1} << 40) && v < (int64_t{1} << 40); }

struct ExprLess {
  bool operator()(const Expr& a, const Expr& b) const { return Expr::compare(a, b) < 0; }
};

// ---- linear forms ----------------------------------------------------------------------------
struct Linear {
  std::map<Expr, int64_t, ExprLess> terms;  // atom -> nonzero coefficient
  int64_t c = 0;

  bool is_const() const { return terms.empty(); }
  void add(const Expr& atom, int64_t k) {
    if (k == 0) return;
    auto [it, inserted] = terms.emplace(atom, k);
    if (!inserted && (it->second = wadd(it->second, k)) == 0) terms.erase(it);
  }
  void add(const Linear& o, int64_t k = 1) {
    for (const auto& [a, v] : o.terms) add(a, wmul(v, k));
    c = wadd(c, wmul(o.c, k));
  }
  Linear scaled(int64_t k) const {
    Linear r;
    r.add(*this, k);
    return r;
  }
  int64_t coeff(const Expr& atom) const {
    auto it = terms.find(atom);
    return it == terms.end() ? 0 : it->second;
  }
};

Linear operator-(const Linear& a, const Linear& b) {
  Linear r = a;
  r.add(b, -1);
  return r;
}

// The canonical expression of a linear form: positive terms in Expr::compare order, then negative
// terms in that order, then the constant. `2*t + T - b - 1`.
Expr to_expr(const Linear& l) {
  std::vector<Expr> pos, neg;
  for (const auto& [a, k] : l.terms) (k > 0 ? pos : neg).push_back(k == 1 ? a : Expr(k) * a);
  Expr sum(0);
  for (const Expr& t : pos) sum = sum + t;
  for (const Expr& t : neg) sum = sum + t;
  return sum + Expr(l.c);
}

// gcd of the coefficients and constant of l together with d (all as magnitudes).
int64_t content_gcd(const Linear& l, int64_t d) {
  uint64_t g = static_cast<uint64_t>(d < 0 ? -d : d);
  for (const auto& [a, k] : l.terms) g = std::gcd(g, static_cast<uint64_t>(k < 0 ? -k : k));
  g = std::gcd(g, static_cast<uint64_t>(l.c < 0 ? -l.c : l.c));
  return static_cast<int64_t>(g);
}

// ---- bounds: linear forms over the bound symbols, or infinite ---------------------------------
using Bound = std::optional<Linear>;  // nullopt: unbounded (-inf for a lower, +inf for an upper)

// True if l >= 0 for every value >= 1 of the bound symbols it mentions.
bool nonneg_for_all_bounds(const Linear& l) {
  int64_t at_ones = l.c;
  for (const auto& [a, k] : l.terms) {
    if (k < 0 || !small(k)) return false;
    at_ones += k;
  }
  return small(l.c) && at_ones >= 0;
}
// The least value of l over bounds >= 1, if l has no negative coefficient (then: all bounds 1).
std::optional<int64_t> least_value(const Linear& l) {
  if (!small(l.c)) return std::nullopt;
  int64_t v = l.c;
  for (const auto& [a, k] : l.terms) {
    if (k < 0 || !small(k)) return std::nullopt;
    v += k;
  }
  return v;
}
bool provably_le(const Bound& a, const Bound& b) { return a && b && nonneg_for_all_bounds(*b - *a); }

Bound constant(int64_t v) {
  Linear l;
  l.c = v;
  return l;
}

struct Interval {
  Bound lo, hi;
};

class Simplifier {
 public:
  explicit Simplifier(const Dims& dims) : dims_(dims) {}

  Expr simplify(const Expr& e) {
    auto it = memo_.find(e);
    if (it != memo_.end()) return it->second;
    Expr r = simplify_uncached(e);
    memo_.emplace(e, r);
    memo_.emplace(r, r);  // a result is its own simplification (idempotence)
    return r;
  }

  // Linear form of an expression, with its atoms simplified.
  Linear linear(const Expr& e) {
    Linear l;
    switch (e.op()) {
      case Op::Const: l.c = e.value(); return l;
      case Op::Add:
        for (const Expr& a : e.args()) l.add(linear(a));
        return l;
      case Op::Mul: return linear_product(e);
      default: break;
    }
    Expr s = simplify(e);
    if (s.op() == Op::Const || s.op() == Op::Add || s.op() == Op::Mul) return linear(s);
    l.add(s, 1);
    return l;
  }

  // f >= 0 at every point of the dims, for every value >= 1 of the bounds.
  bool nonneg(const Linear& f) {
    int budget = kProofBudget;
    return nonneg(f, budget);
  }
  bool positive(const Linear& f) {
    Linear g = f;
    g.c = wadd(g.c, -1);
    return nonneg(g);
  }

  Interval interval(const Linear& f) {
    Interval r{Linear{}, Linear{}};
    r.lo->c = r.hi->c = f.c;
    for (const auto& [a, k] : f.terms) {
      Interval ai = atom_interval(a);
      const Bound& for_lo = k > 0 ? ai.lo : ai.hi;
      const Bound& for_hi = k > 0 ? ai.hi : ai.lo;
      if (r.lo) {
        if (for_lo) r.lo->add(*for_lo, k);
        else r.lo.reset();
      }
      if (r.hi) {
        if (for_hi) r.hi->add(*for_hi, k);
        else r.hi.reset();
      }
    }
    return r;
  }

 private:
  static constexpr int kProofBudget = 200;  // case splits per proof; beyond it, "not proved"

  const Dims& dims_;
  std::unordered_map<Expr, Expr, ExprHash, ExprEq> memo_;

  // ---- products ----------------------------------------------------------------------------
  // k * x (one non-constant factor) is linear; a product of several non-constant factors is an
  // atom whose factors are sorted (multiplication commutes) and whose constants are gathered.
  Linear linear_product(const Expr& e) {
    int64_t k = 1;
    std::vector<Expr> factors;
    std::optional<Linear> single;
    for (const Expr& a : e.args()) {
      Expr s = simplify(a);
      if (s.is_const()) {
        k = wmul(k, s.value());
        continue;
      }
      // (c * x * y) contributes its coefficient c and factors x, y.
      if (s.op() == Op::Mul) {
        for (const Expr& f : s.args()) {
          if (f.is_const()) k = wmul(k, f.value());
          else factors.push_back(f);
        }
        continue;
      }
      factors.push_back(s);
    }
    Linear l;
    if (k == 0) return l;
    if (factors.empty()) {
      l.c = k;
      return l;
    }
    if (factors.size() == 1) return linear(factors[0]).scaled(k);  // k * (a + b) = k*a + k*b
    std::sort(factors.begin(), factors.end(), ExprLess{});
    l.add(Expr::make(Op::Mul, std::move(factors)), k);
    return l;
  }

  // ---- the prover --------------------------------------------------------------------------
  bool nonneg(const Linear& f, int& budget) {
    if (--budget < 0) return false;
    if (f.is_const()) return f.c >= 0;
    // Monotone elimination of one min/max atom m with coefficient k in f:
    //   k > 0, m = min(a_i):  f >= 0  <=  f[m := a_i] >= 0 for all i   (m equals some a_i)
    //   k < 0, m = min(a_i):  f >= 0  <=  f[m := a_i] >= 0 for some i  (m <= a_i, f decreases)
    //   k > 0, m = max(a_i):  f >= 0  <=  f[m := a_i] >= 0 for some i  (m >= a_i)
    //   k < 0, m = max(a_i):  f >= 0  <=  f[m := a_i] >= 0 for all i
    for (const auto& [m, k] : f.terms) {
      if (m.op() != Op::Min && m.op() != Op::Max) continue;
      bool for_all = (k > 0) == (m.op() == Op::Min);
      Linear rest = f;
      rest.add(m, -k);
      for (const Expr& a : m.args()) {
        Linear g = rest;
        g.add(linear(a), k);
        bool ok = nonneg(g, budget);
        if (for_all && !ok) return false;
        if (!for_all && ok) return true;
      }
      return for_all;
    }
    Interval i = interval(f);
    return i.lo && nonneg_for_all_bounds(*i.lo);
  }

  // ---- ranges of atoms ---------------------------------------------------------------------
  Interval atom_interval(const Expr& a) {
    switch (a.op()) {
      case Op::Symbol:
        for (const Dim& d : dims_) {
          Linear sym;
          sym.add(d.bound, 1);
          if (a.same(d.var)) {  // 0 <= var <= Bound - 1
            sym.c = -1;
            return {constant(0), sym};
          }
          if (a.same(d.bound)) return {sym, sym};  // a bound is a parameter (>= 1)
        }
        return {};  // a symbol the dims do not know: unbounded
      case Op::Mod: return mod_interval(a);
      case Op::FloorDiv: return floordiv_interval(a);
      case Op::Min:
      case Op::Max: return minmax_interval(a);
      case Op::Mul: return product_interval(a);
      default: return {};
    }
  }

  Interval mod_interval(const Expr& a) {
    const Expr& y = a.arg(1);
    if (y.is_const())  // x % c in [0, c - 1] for c > 0, [c + 1, 0] for c < 0
      return y.value() > 0 ? Interval{constant(0), constant(y.value() - 1)}
                           : Interval{constant(y.value() + 1), constant(0)};
    Linear ly = linear(y);
    Interval iy = interval(ly);
    if (positive(ly)) {  // x % y in [0, y - 1] <= [0, hi(y) - 1]
      if (!iy.hi) return {constant(0), Bound{}};
      Linear hi = *iy.hi;
      hi.c = wadd(hi.c, -1);
      return {constant(0), hi};
    }
    if (positive(ly.scaled(-1))) {  // y < 0: x % y in [y + 1, 0]
      if (!iy.lo) return {Bound{}, constant(0)};
      Linear lo = *iy.lo;
      lo.c = wadd(lo.c, 1);
      return {lo, constant(0)};
    }
    return {};
  }

  Interval floordiv_interval(const Expr& a) {
    const Expr& y = a.arg(1);
    Linear lx = linear(a.arg(0));
    if (!y.is_const()) {  // x >= 0, y >= 1: 0 <= x // y <= x
      if (nonneg(lx) && positive(linear(y))) return {constant(0), interval(lx).hi};
      return {};
    }
    int64_t c = y.value();
    if (c < 0) {  // x // c == (-x) // (-c)
      lx = lx.scaled(-1);
      c = -c;
    }
    Interval ix = interval(lx);
    Interval r;
    // Constant bounds divide exactly; symbolic ones keep what is cheap to prove:
    // x >= 0 => x // c >= 0;  x <= h, h >= 0 => x // c <= h;  x <= 0 => x // c <= 0.
    if (ix.lo && ix.lo->is_const()) r.lo = constant(fdiv(ix.lo->c, c));
    else if (ix.lo && nonneg_for_all_bounds(*ix.lo)) r.lo = constant(0);
    if (ix.hi && ix.hi->is_const()) r.hi = constant(fdiv(ix.hi->c, c));
    else if (ix.hi && nonneg_for_all_bounds(*ix.hi)) r.hi = ix.hi;
    else if (ix.hi && nonneg_for_all_bounds(ix.hi->scaled(-1))) r.hi = constant(0);
    return r;
  }

  Interval minmax_interval(const Expr& a) {
    bool is_min = a.op() == Op::Min;
    std::vector<Interval> in;
    for (const Expr& x : a.args()) in.push_back(interval(linear(x)));
    // min: lo = the least of the lower bounds (if one is provably least), hi = any upper bound
    // (the least one if provable). max: mirrored.
    auto pick = [&](bool lower, bool want_least, bool any_will_do) -> Bound {
      const Bound* best = nullptr;
      for (const Interval& i : in) {
        const Bound& b = lower ? i.lo : i.hi;
        if (!b) continue;
        if (!best || (want_least ? provably_le(b, *best) : provably_le(*best, b))) best = &b;
      }
      if (!best) return {};
      if (any_will_do) return *best;
      // Every operand's bound must be on the right side of the chosen one.
      bool all_ordered = true;
      for (const Interval& i : in) {
        const Bound& b = lower ? i.lo : i.hi;
        all_ordered = all_ordered && (want_least ? provably_le(*best, b) : provably_le(b, *best));
      }
      if (all_ordered) return *best;
      // Otherwise a constant lower bound of a min: the least of the operands' lower bounds at
      // their smallest (bounds with nonnegative coefficients are smallest when every bound is 1).
      if (!lower || !want_least) return {};
      int64_t least = 0;
      for (size_t k = 0; k < in.size(); ++k) {
        std::optional<int64_t> v = in[k].lo ? least_value(*in[k].lo) : std::nullopt;
        if (!v) return {};
        least = k == 0 ? *v : std::min(least, *v);
      }
      return constant(least);
    };
    if (is_min) return {pick(true, true, false), pick(false, true, true)};
    return {pick(true, false, true), pick(false, false, false)};
  }

  Interval product_interval(const Expr& a) {
    // Constant intervals multiply; otherwise factors with nonnegative lower bounds l_i give a
    // product >= the product of the least values of the l_i.
    int64_t lo = 1, hi = 1, least = 1;
    bool all_const = true, all_nonneg = true;
    for (const Expr& f : a.args()) {
      Interval i = interval(linear(f));
      std::optional<int64_t> lv = i.lo ? least_value(*i.lo) : std::nullopt;
      bool nn = lv && *lv >= 0;
      all_nonneg = all_nonneg && nn;
      if (nn) {
        __int128 p = static_cast<__int128>(least) * *lv;
        least = p < (__int128{1} << 40) ? static_cast<int64_t>(p) : 0;  // 0 is always sound here
      }
      if (!(i.lo && i.hi && i.lo->is_const() && i.hi->is_const() && small(i.lo->c) &&
            small(i.hi->c) && small(lo) && small(hi))) {
        all_const = false;
        continue;
      }
      __int128 c[4] = {(__int128)lo * i.lo->c, (__int128)lo * i.hi->c, (__int128)hi * i.lo->c,
                       (__int128)hi * i.hi->c};
      __int128 l = *std::min_element(c, c + 4), h = *std::max_element(c, c + 4);
      if (!small(static_cast<int64_t>(l >> 1)) || !small(static_cast<int64_t>(h >> 1)) ||
          l < -(__int128{1} << 40) || h > (__int128{1} << 40)) {
        all_const = false;
        continue;
      }
      lo = static_cast<int64_t>(l);
      hi = static_cast<int64_t>(h);
    }
    if (all_const) return {constant(lo), constant(hi)};
    if (all_nonneg) return {constant(least), Bound{}};
    return {};
  }

  // ---- simplification of each node kind -----------------------------------------------------
  Expr simplify_uncached(const Expr& e) {
    switch (e.op()) {
      case Op::Const:
      case Op::Bool:
      case Op::Symbol:
        return e;
      case Op::Add:
      case Op::Mul:
        return to_expr(linear(e));
      case Op::FloorDiv: return simplify_floordiv(e);
      case Op::Mod: return simplify_mod(e);
      case Op::Min:
      case Op::Max:
        return simplify_minmax(e);
      case Op::Eq:
      case Op::Ne:
      case Op::Lt:
      case Op::Le:
        return simplify_compare(e.op(), linear(e.arg(0)), linear(e.arg(1)));
      case Op::And:
      case Op::Or:
        return simplify_logic(e);
      case Op::Not: return simplify_not(simplify(e.arg(0)));
      case Op::Slice:
        return slice(simplify(e.arg(0)), simplify(e.arg(1)), simplify(e.arg(2)));
      case Op::Seq: {
        std::vector<Expr> entries;
        for (const Expr& a : e.args()) entries.push_back(simplify(a));
        return seq(std::move(entries));
      }
    }
    internal_error("unknown op");
  }

  // Splits x into (part whose coefficients and constant are multiples of c) + rest, the rest's
  // constant being in the range of x % c.
  std::pair<Linear, Linear> split_multiples(const Linear& x, int64_t c) {
    Linear mult, rest;
    for (const auto& [a, k] : x.terms) (k % c == 0 ? mult : rest).add(a, k);
    rest.c = fmod(x.c, c);
    mult.c = x.c - rest.c;
    return {mult, rest};
  }

  // True if 0 <= x < y (then x // y == 0 and x % y == x).
  bool below_divisor(const Linear& x, const Linear& y) { return nonneg(x) && positive(y - x); }

  Expr simplify_floordiv(const Expr& e) {
    Linear x = linear(e.arg(0));
    Expr ys = simplify(e.arg(1));
    if (!ys.is_const()) {
      // x // y == 0 if 0 <= x < y
      if (below_divisor(x, linear(ys))) return Expr(0);
      return floordiv(to_expr(x), ys);
    }
    int64_t c = ys.value();
    if (c == 0) return floordiv(to_expr(x), ys);  // reported by the constructor
    // (c*m + r) // c == m + r // c
    auto [mult, rest] = split_multiples(x, c);
    Linear out = mult.scaled(0);
    for (const auto& [a, k] : mult.terms) out.add(a, k / c);
    out.c = mult.c / c;
    if (rest.is_const() && rest.c == 0) return to_expr(out);
    // (g*x) // (g*d) == x // d for g > 0 dividing every coefficient, the constant and c
    int64_t g = content_gcd(rest, c);
    if (g > 1) {
      rest = divided(rest, g);
      c /= g;
    }
    Expr q;
    Linear rest_c = c > 0 ? rest : rest.scaled(-1);  // r // c == (-r) // (-c)
    int64_t cpos = c > 0 ? c : -c;
    // r // c == 0 if 0 <= r < c
    if (below_divisor(rest_c, linear(Expr(cpos)))) return to_expr(out);
    if (rest.is_const()) {
      out.c = wadd(out.c, fdiv(rest.c, c));
      return to_expr(out);
    }
    // (x // a) // b == x // (a*b) for a, b > 0
    if (rest.terms.size() == 1 && rest.c == 0 && rest.terms.begin()->second == 1) {
      const Expr& inner = rest.terms.begin()->first;
      if (inner.op() == Op::FloorDiv && inner.arg(1).is_const() && inner.arg(1).value() > 0 &&
          c > 0 && small(inner.arg(1).value()) && small(c))
        q = simplify(floordiv(inner.arg(0), inner.arg(1).value() * c));
    }
    Linear result = out;
    if (q.defined())
      result.add(linear(q));  // q is simplified (and memoized)
    else
      result.add(floordiv(to_expr(rest), Expr(c)), 1);  // an atom in normal form
    return to_expr(result);
  }

  static Linear divided(const Linear& l, int64_t g) {
    Linear r;
    for (const auto& [a, k] : l.terms) r.add(a, k / g);
    r.c = l.c / g;
    return r;
  }

  Expr simplify_mod(const Expr& e) {
    Linear x = linear(e.arg(0));
    Expr ys = simplify(e.arg(1));
    if (!ys.is_const()) {
      // x % y == x if 0 <= x < y
      if (below_divisor(x, linear(ys))) return to_expr(x);
      return to_expr(x) % ys;
    }
    int64_t c = ys.value();
    if (c == 0) return to_expr(x) % ys;  // reported by the constructor
    // (c*m + r) % c == r % c
    Linear rest = split_multiples(x, c).second;
    if (rest.is_const()) return Expr(rest.c);
    // r % c == r if r is in the range of x % c ([0, c - 1], or [c + 1, 0] for c < 0)
    if (c > 0 ? below_divisor(rest, linear(Expr(c)))
              : below_divisor(rest.scaled(-1), linear(Expr(-c))))
      return to_expr(rest);
    // (x % a) % b == x % b if b divides a
    if (rest.terms.size() == 1 && rest.c == 0 && rest.terms.begin()->second == 1) {
      const Expr& inner = rest.terms.begin()->first;
      if (inner.op() == Op::Mod && inner.arg(1).is_const() && inner.arg(1).value() % c == 0)
        return simplify(inner.arg(0) % Expr(c));
    }
    return to_expr(rest) % Expr(c);
  }

  Expr simplify_minmax(const Expr& e) {
    bool is_min = e.op() == Op::Min;
    // Operands simplified and flattened: min(a, min(b, c)) == min(a, b, c).
    std::vector<Expr> args;
    for (const Expr& a : e.args()) {
      Expr s = simplify(a);
      if (s.op() == e.op()) args.insert(args.end(), s.args().begin(), s.args().end());
      else args.push_back(s);
    }
    // Canonical order (min and max commute); duplicates dropped: min(a, a) == a.
    std::sort(args.begin(), args.end(), ExprLess{});
    args.erase(std::unique(args.begin(), args.end(), ExprEq{}), args.end());
    // Dominated operands dropped: min(a, b) == a if a <= b; max(a, b) == a if a >= b.
    std::vector<Expr> kept;
    std::vector<Linear> kept_lin;
    for (const Expr& a : args) {
      Linear la = linear(a);
      auto dominates = [&](const Linear& x, const Linear& y) {  // x makes y redundant
        return is_min ? nonneg(y - x) : nonneg(x - y);
      };
      bool redundant = false;
      for (const Linear& k : kept_lin)
        if (dominates(k, la)) {
          redundant = true;
          break;
        }
      if (redundant) continue;
      for (size_t i = kept.size(); i-- > 0;)
        if (dominates(la, kept_lin[i])) {
          kept.erase(kept.begin() + i);
          kept_lin.erase(kept_lin.begin() + i);
        }
      kept.push_back(a);
      kept_lin.push_back(std::move(la));
    }
    return is_min ? min(kept) : max(kept);
  }

  // a OP b with D = b - a: decided when the ranges allow, otherwise written as
  // (negative terms of D) OP (positive terms of D), the constant on the side that keeps it
  // positive: t + 1 < b + 3 -> t < b + 2;  3 < t stays.
  Expr simplify_compare(Op op, const Linear& a, const Linear& b) {
    Linear d = b - a;
    // Integer tightening by the gcd g > 1 of the coefficients of d = g*x + c:
    //   g*x + c == 0  ->  false if g does not divide c, else x + c/g == 0
    //   g*x + c >= 0  ->  x + floor(c/g) >= 0          (and a < b is a <= b - 1)
    uint64_t g = 0;
    for (const auto& [x, k] : d.terms) g = std::gcd(g, static_cast<uint64_t>(k < 0 ? -k : k));
    if (g > 1 && small(d.c)) {
      int64_t gi = static_cast<int64_t>(g);
      if (op == Op::Eq || op == Op::Ne) {
        if (d.c % gi != 0) return Expr::boolean(op == Op::Ne);
        d = divided(d, gi);
      } else {
        if (op == Op::Lt) d.c -= 1;
        op = Op::Le;
        int64_t c = fdiv(d.c, gi);
        d = divided(d, gi);
        d.c = c;
      }
    }
    switch (op) {
      case Op::Lt:  // a < b: true if b - a > 0, false if a - b >= 0
        if (positive(d)) return Expr::boolean(true);
        if (nonneg(d.scaled(-1))) return Expr::boolean(false);
        break;
      case Op::Le:  // a <= b: true if b - a >= 0, false if a - b > 0
        if (nonneg(d)) return Expr::boolean(true);
        if (positive(d.scaled(-1))) return Expr::boolean(false);
        break;
      case Op::Eq:  // a == b: true if b - a is 0; false if b - a > 0 or a - b > 0
      case Op::Ne:
        if (d.is_const() && d.c == 0) return Expr::boolean(op == Op::Eq);
        if (positive(d) || positive(d.scaled(-1))) return Expr::boolean(op == Op::Ne);
        break;
      default: internal_error("not a comparison");
    }
    auto sides = [](const Linear& dd) {
      Linear lhs, rhs;
      for (const auto& [x, k] : dd.terms) (k > 0 ? rhs : lhs).add(x, k > 0 ? k : -k);
      (dd.c > 0 ? rhs.c : lhs.c) = dd.c > 0 ? dd.c : -dd.c;
      return std::pair<Expr, Expr>(to_expr(lhs), to_expr(rhs));
    };
    auto [l, r] = sides(d);
    switch (op) {
      case Op::Lt: return l < r;
      case Op::Le: return l <= r;
      default: {
        // == and != are symmetric: of the two orientations, the one with the greater left side
        // (so that a constant goes right: (t + 1) % 5 == 0).
        auto [l2, r2] = sides(d.scaled(-1));
        if (Expr::compare(l2, l) > 0) std::tie(l, r) = std::tie(l2, r2);
        return op == Op::Eq ? l == r : l != r;
      }
    }
  }

  // Negation pushed into the operand:
  //   !(a < b) -> b <= a     !(a <= b) -> b < a     !(a == b) -> a != b     !(a != b) -> a == b
  //   !(x && y) -> !x || !y  !(x || y) -> !x && !y  !!x -> x                !true -> false
  Expr negate(const Expr& x) {
    switch (x.op()) {
      case Op::Bool: return Expr::boolean(!x.value());
      case Op::Lt: return x.arg(1) <= x.arg(0);
      case Op::Le: return x.arg(1) < x.arg(0);
      case Op::Eq: return x.arg(0) != x.arg(1);
      case Op::Ne: return x.arg(0) == x.arg(1);
      case Op::Not: return x.arg(0);
      case Op::And:
      case Op::Or: {
        std::vector<Expr> args;
        for (const Expr& a : x.args()) args.push_back(negate(a));
        Expr r = args[0];
        for (size_t i = 1; i < args.size(); ++i) r = x.op() == Op::And ? (r || args[i]) : (r && args[i]);
        return r;
      }
      default: internal_error(cat("negating a non-boolean `", x.str(), "`"));
    }
  }
  Expr simplify_not(const Expr& simplified_operand) { return simplify(negate(simplified_operand)); }

  Expr simplify_logic(const Expr& e) {
    bool is_and = e.op() == Op::And;
    // x && true -> x;  x && false -> false;  x || false -> x;  x || true -> true;
    // flattened, sorted (&& and || commute), duplicates dropped (x && x -> x).
    std::vector<Expr> args;
    for (const Expr& a : e.args()) {
      Expr s = simplify(a);
      if (s.is_bool_const()) {
        if (s.value() != is_and) return s;  // the absorbing element
        continue;
      }
      if (s.op() == e.op()) args.insert(args.end(), s.args().begin(), s.args().end());
      else args.push_back(s);
    }
    std::sort(args.begin(), args.end(), ExprLess{});
    args.erase(std::unique(args.begin(), args.end(), ExprEq{}), args.end());
    // x && !x -> false;  x || !x -> true
    for (size_t i = 0; i < args.size(); ++i) {
      Expr n = simplify(negate(args[i]));
      for (size_t j = i + 1; j < args.size(); ++j)
        if (n.same(args[j])) return Expr::boolean(!is_and);
    }
    Expr r = Expr::boolean(is_and);
    for (const Expr& a : args) r = is_and ? (r && a) : (r || a);
    return r;
  }
};

}  // namespace

Expr simplify(const Expr& e, const Dims& dims) {
  if (!e.defined()) throw UserError("cannot simplify an undefined expression");
  return Simplifier(dims).simplify(e);
}

Range range_of(const Expr& e, const Dims& dims) {
  if (!e.defined() || e.type() != Type::Int)
    throw UserError(cat("range_of needs an integer expression, got `", e.str(), "`"));
  Simplifier s(dims);
  Interval i = s.interval(s.linear(e));
  Range r;
  if (i.lo) r.lo = to_expr(*i.lo);
  if (i.hi) r.hi = to_expr(*i.hi);
  return r;
}

bool prove_nonneg(const Expr& e, const Dims& dims) {
  if (!e.defined() || e.type() != Type::Int)
    throw UserError(cat("prove_nonneg needs an integer expression, got `", e.str(), "`"));
  Simplifier s(dims);
  return s.nonneg(s.linear(e));
}

bool prove_positive(const Expr& e, const Dims& dims) {
  if (!e.defined() || e.type() != Type::Int)
    throw UserError(cat("prove_positive needs an integer expression, got `", e.str(), "`"));
  Simplifier s(dims);
  return s.positive(s.linear(e));
}

}  // namespace tempo::sym
