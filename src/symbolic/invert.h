// Inversion of dependence expressions (TEMPO §3): for a source point, which sink points read it.
#pragma once

#include "symbolic/expr.h"

namespace tempo::sym {

// phi is the sequence with which a sink op (domain `sink`) reads a source op (domain `source`):
// one entry per source dimension, written in the sink's variables. Returns the inverse: a
// sequence with one entry per *sink* dimension, written in the source's variables, such that the
// sink point p reads source point q iff p lies in inverse(q). Examples (sink = source = t:T):
//   t+3 -> t-3;  max(0,t-3):t+1 -> t:min(t+4,T);  t:T -> 0:t+1;  0:t+1 -> t:T;
// a sink dimension that phi does not mention (e.g. a constant index) -> 0:Bound (all of it).
// The result is exact; otherwise a UserError says why phi cannot be inverted (e.g. non-affine).
// Sink and source variables of the same name are the same dimension.
Expr invert(const Expr& phi, const Dims& sink, const Dims& source);

}  // namespace tempo::sym
