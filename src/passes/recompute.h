// Recomputation for memory (TEMPO §8 names it as missing; PassOptions::recompute): a cheap
// activation that a loop keeps for a reader after it is recomputed there from inputs that reader
// keeps anyway, instead of being stored for the whole loop (or swapped).
#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// An elementwise op y over a domain D read both at its own points (inside a loop, e.g. by a
// recurrence) and through a whole window x[..0:T..] by a later reader R (a learner reading the
// rollout), where every input of y that varies along that window's dimension is read by R through
// the same window: R reads a copy of y computed from those inputs instead, which vectorization
// then batches. y's points are then freed at their own step instead of living to the end of
// the loop. Cost estimate: an elementwise op is one pass over inputs R reads anyway (a few
// operations per element), against its bytes kept for the whole loop (and copied twice if
// swapped), so it always pays under memory pressure; matmuls and reductions are not recomputed.
bool recompute_activations(Program& p);

}  // namespace tempo::passes
