// Dataflow fusion (TEMPO §4.4): connected ops that run at the same points and read each other at
// the current point become one Fused op whose region holds them, so that the scheduler sees one
// statement per region and the runtime launches one kernel per region and point. Intermediate
// values of a region are never stored.
#pragma once

#include "passes/pipeline.h"

namespace tempo::passes {

bool fuse_dataflow(Program& p);

}  // namespace tempo::passes
