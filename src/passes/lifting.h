#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Lifting (TEMPO §4.1, Fig. 10): a per-point floating sum over a window of a dimension that moves
// with the point, `x[t:T].sum(0)`, `x[0:t+1].sum(0)`, `x[max(0,t-w):t+1].sum(0)`,
// `x[t:min(t+n,T)].sum(0)` (or a sum over dim 0 and other dims), is read from one scan of the
// whole dimension computed once, so the work over a dimension of size T is O(T) instead of
// O(T^2): prefixes x[0:b] from cumsum(x), suffixes x[a:T] from flip(cumsum(flip(x))), other
// windows as P[b] - P[a] of the padded prefix scan P. Discounted sums over the future,
// `r[t:T].discounted_sum(gamma, done[t:T])` (RL returns, GAE), are read from one reverse
// discounted scan (discounted_cumsum). A running sum written as a recurrence and read only at
// its end (acc[t] = acc[t - 1] + x[t], read at T - 1: autodiff's gradient of a parameter read at
// every step) becomes one sum over x[0:T]. Vectorization then batches the reads when a and b
// are t + c. Not lifted: windows with a step, several stacked dims, sums with keepdim, integer
// sums, windows whose source depends on the sum at the same point (the scan would wait for its
// reader), recurrences read before their end, discounted sums over windows that end before the
// dimension does (n-step returns), and windows of products, maxima or other reductions.
bool lift_scans(Program& p);

}  // namespace tempo::passes
