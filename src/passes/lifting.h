#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Lifting (TEMPO §4.1, Fig. 10): a per-point sum over a moving window of a dimension,
// `x[t:T].sum(0)`, `x[0:t+1].sum(0)`, `x[max(0,t-w):t+1].sum(0)`, `x[t:min(t+n,T)].sum(0)`, is
// read from one prefix scan P of the whole dimension (sum = P[b] - P[a]), so the work over a
// dimension of size T is O(T) instead of O(T^2); vectorization then batches the reads when b and
// a are t + c. Not lifted yet: discounted and masked sums (the RL returns), and windows of
// products, maxima or other reductions.
bool lift_scans(Program& p);

}  // namespace tempo::passes
