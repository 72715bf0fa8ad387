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
// Sink and source variables of the same name are the same dimension.
//
// Shape: a lone entry (not a sequence) when the sink has one dimension and phi is not written as
// a sequence; otherwise a sequence.
//
// Exactness: inverse(q), intersected with the sink's domain, is exactly the set of sink points
// that read q, for every source point q that some sink point reads. A source point that no sink
// point reads (q = 5 for phi = 0) may still get a non-empty inverse; invert_when() says where the
// inverse holds. If the readers of a source point do not form a box of slices (a strided or
// diagonal access such as 2*t or [t + i]), or phi is not affine, invert is a UserError saying why.
Expr invert(const Expr& phi, const Dims& sink, const Dims& source);

struct Inversion {
  Expr inverse;  // as returned by invert()
  // Condition on the source point (in the source's variables) under which some sink point reads
  // it; `true` when the inverse is exact at every source point (e.g. t+3 -> t-3).
  Expr when;
};
Inversion invert_when(const Expr& phi, const Dims& sink, const Dims& source);

}  // namespace tempo::sym
