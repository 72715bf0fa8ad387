// Recurrences along a dimension and how far ahead of them each op reads: what lets a pass keep
// per step what can run as the recurrence goes (TEMPO Fig. 23: the n-step learner at t needs the
// acting steps up to t + n - 1 only, so learning interleaves with acting and frees o[t] early).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ir/sdg.h"

namespace tempo::passes {

// An edge is carried by a dimension outer to d (in `outer`) when the sink reads the source at a
// strictly earlier point of it: the outer loop orders such a cycle, so it is not a recurrence
// along d.
bool carried_outside(const ir::Graph& g, const ir::Edge& e, const Dims& outer);

// Ops on a cycle of reads that no dimension in `outer` (those before d) orders: the recurrences
// along d (s[t + 1] = f(s[t])) and along dimensions after it.
std::vector<bool> recurrent_along(const ir::Graph& g, const Dims& outer);

// Per op, how many steps of d ahead of its own point it needs a recurrence along d (a cycle
// through a read of another point of d, s[t - 1]) at the same point of the outer dimensions:
// kNoRecurrence where it needs none (only sources, or points of earlier outer iterations), kWhole
// where it needs all of one (x[t:T], a sum over d, a fixed point like x[T - 1]), else k >= 0
// (r[t:min(t + n, T)] read by an n-step return: n - 1). The recurrence's own ops have 0.
inline constexpr int64_t kNoRecurrence = std::numeric_limits<int64_t>::min();
inline constexpr int64_t kWhole = std::numeric_limits<int64_t>::max();
std::vector<int64_t> recurrence_lookahead(const ir::Graph& g, const Dim& d, const Dims& outer);

// Whether a look-ahead is bounded: the op can run as the recurrence goes.
inline bool streams(int64_t lookahead) {
  return lookahead != kNoRecurrence && lookahead != kWhole;
}

}  // namespace tempo::passes
