#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Lifting (TEMPO §4.1, Fig. 10): recurrent patterns become scans over the whole dimension. A sum
// of a per-timestep window over the future (`x[t:T].sum(0)`, discounted, masked at episode ends)
// or the past (`x[0:t+1].sum(0)`) is read at t from one scan over x[0:T], so the work over a
// dimension of size T is O(T) instead of O(T^2).
bool lift_scans(Program& p);

}  // namespace tempo::passes
