// Canonical, range-aware simplification.
#pragma once

#include "symbolic/expr.h"

namespace tempo::sym {

// Returns an expression equal to e at every point 0 <= d.var < d.bound (bound >= 1) of `dims`.
// Constant folding; a normal form for linear (affine) parts: a sum of coefficient*atom terms in
// a canonical operand order plus one constant; min/max/comparisons decided from the known ranges
// where provable (e.g. min(t + 5, T) - t stays, min(t, T) -> t, max(0, t) -> t, t < T -> true);
// boolean simplification. Slices and sequences are simplified entry-wise. Idempotent:
// simplify(simplify(e)) is structurally simplify(e).
Expr simplify(const Expr& e, const Dims& dims);

// Range of an integer expression over the dims' domain as far as the simplifier can bound it.
// Bounds are in terms of symbols: lower/upper may mention bounds (e.g. t + 5 in [5, T + 4]).
struct Range {
  Expr lo;  // undefined if unbounded below
  Expr hi;  // inclusive; undefined if unbounded above
};
Range range_of(const Expr& e, const Dims& dims);

// Proves e >= 0 (resp. e > 0) for every point of dims and every value of the bounds (>= 1).
bool prove_nonneg(const Expr& e, const Dims& dims);
bool prove_positive(const Expr& e, const Dims& dims);

}  // namespace tempo::sym
