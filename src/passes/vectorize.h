#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

// Vectorization (TEMPO §4.2, Fig. 11; TimeRL Alg. 2): for each temporal dimension d, the ops that
// can be computed for all points of d at once (no cycle carried along d through them, a
// vectorization rule for their kind, d nowhere in their attributes, shapes or conditions) lose d
// from their domain and gain a leading spatial dimension of size D. Reads between a vectorized op
// and the rest are rewritten: a point read x[d] of a vectorized source by a per-point op becomes
// an index of the batched value, a vectorized op reading a per-point source at d reads the stack
// x[0:D], and reads between two vectorized ops drop the entry. What a user function without
// outputs (a sink: progress, checkpoints) reads at each point of d stays per point where it
// depends on a recurrence along d, so that the sink runs as d goes rather than after all of it.
bool vectorize(Program& p);

}  // namespace tempo::passes
